// Ring algorithms: rank r only talks to its neighbours, left = r - 1 and right = r + 1 (mod W).
// Reduce-scatter: in step s (0 .. W-2) rank r sends the partial of chunk (r - s - 1) to the right
// and folds its own contribution into the partial of chunk (r - s - 2) that arrives from the left,
// so chunk c starts at rank c + 1, meets ranks c + 2, ..., and ends complete on rank c: exactly
// the canonical order. All-gather: in step s rank r forwards chunk (r - s) to the right.
//
// Pipelining: every chunk moves in K segments of at most segment_bytes (K from the largest chunk,
// so every step has up to K messages on every link; a smaller chunk's last segment may be empty,
// and with a fold window's uneven chunks, whole chunks may be: an empty segment is not sent). The
// pass runs segment by segment: message j = k * P + t carries segment k of step t (P steps: W - 1
// of the reduce-scatter, then with the all-gather W - 1 more), so each segment index is a small
// ring of its own, and the segments' rings follow one another. Each rank sends message 0, then
// alternates "receive j, send j + 1": message j + 1 forwards exactly what message j brought
// (folded, or complete), while it is still in cache, so the kernel's or the shared-memory ring's
// copy of a partial reads it from there, not from memory a chunk later. Sending, reducing and
// receiving overlap across the ring (a rank folds message j while its right neighbour receives
// the message j - 1 it sent on), and at most one message per link is in flight (Transport::isend).
// Segments only cut chunks into element ranges: every element is combined exactly as without them.
#include <algorithm>
#include <vector>

#include "collective/algorithms/algorithm.h"

namespace ruccl {

namespace {

const unsigned char* at(const void* p, std::size_t offset) {
  return static_cast<const unsigned char*>(p) + offset;
}
unsigned char* at(void* p, std::size_t offset) { return static_cast<unsigned char*>(p) + offset; }

std::size_t mod(long long a, long long w) { return static_cast<std::size_t>(((a % w) + w) % w); }

// The segments of a `count`-element buffer split into W chunks (balanced, or a fold window's).
struct RingSegments {
  ChunkLayout chunks;
  std::size_t element_size;
  std::size_t segment_elements;
  std::size_t per_chunk;  // K: segments of every chunk

  RingSegments(const ChunkLayout& layout, std::size_t es, std::size_t segment_bytes)
      : chunks(layout),
        element_size(es),
        segment_elements(std::max<std::size_t>(1, segment_bytes / es)) {
    per_chunk =
        std::max<std::size_t>(1, (layout.largest() + segment_elements - 1) / segment_elements);
  }
  // Byte offset and byte length of segment k of chunk c.
  std::size_t begin(std::size_t c, std::size_t k) const {
    return (chunks.begin(c) + std::min(k * segment_elements, chunks.size(c))) * element_size;
  }
  std::size_t bytes(std::size_t c, std::size_t k) const {
    const std::size_t length = chunks.size(c);
    const std::size_t first = std::min(k * segment_elements, length);
    return std::min(segment_elements, length - first) * element_size;
  }
};

// Runs a pass of `messages` messages on this rank: send(0), then receive(j) / send(j + 1)
// alternately; waits until the last send to the right may be reused.
template <typename Send, typename Receive>
void ring_pass(const AlgorithmContext& ctx, int right, std::size_t messages, Send&& send,
               Receive&& receive) {
  if (messages == 0) return;
  send(std::size_t{0});
  for (std::size_t j = 0; j < messages; ++j) {
    receive(j);
    if (j + 1 < messages) send(j + 1);
  }
  ctx.transport.wait_send(right, ctx.deadline);
}

std::uint64_t step_tag(const AlgorithmContext& ctx, std::uint64_t phase, std::size_t j) {
  return ctx.tag + phase + (static_cast<std::uint64_t>(j) & 0x7FFF);
}

// Ring reduce-scatter over whole buffers: `work` (count elements) receives the partials; on
// return chunk `rank` of `work` holds the complete fold (Mean applied). With `then_all_gather`
// the same pass goes on with the all-gather of the folded chunks, so `work` ends complete.
void ring_reduce_scatter_into(const AlgorithmContext& ctx, const void* in, void* work,
                              std::size_t count, const ReduceKernel& kernel,
                              std::size_t segment_bytes, bool then_all_gather) {
  const long long w = ctx.world();
  const long long r = ctx.rank();
  const std::size_t es = kernel.element_size();
  if (w == 1) {
    copy_bytes(work, in, count * es);
    kernel.finish(work, count, 1);
    return;
  }
  const RingSegments seg(ChunkLayout(count, static_cast<std::size_t>(w), ctx.window), es,
                         segment_bytes);
  const auto steps = static_cast<std::size_t>(w - 1);
  const std::size_t pass_steps = then_all_gather ? 2 * steps : steps;  // P
  const int right = static_cast<int>(mod(r + 1, w));
  const int left = static_cast<int>(mod(r - 1, w));
  // Message j: segment k = j / P of step t = j % P; a step t >= W - 1 is all-gather step t - W + 1.
  // An empty segment is no message: its sender and its receiver both know it is empty (message j
  // carries the same chunk and segment on both ends), and the next message from the same link
  // forwards the same, empty, segment.
  auto send = [&](std::size_t j) {
    const std::size_t k = j / pass_steps;
    const auto t = static_cast<long long>(j % pass_steps);
    if (t < w - 1) {
      const std::size_t c = mod(r - t - 1, w);
      const std::size_t begin = seg.begin(c, k);
      if (seg.bytes(c, k) == 0) return;
      ctx.transport.isend(right, step_tag(ctx, 0, j), t == 0 ? at(in, begin) : at(work, begin),
                          seg.bytes(c, k), ctx.deadline);
      return;
    }
    const std::size_t c = mod(r - (t - (w - 1)), w);
    if (seg.bytes(c, k) == 0) return;
    ctx.transport.isend(right, step_tag(ctx, 0x8000, j), at(work, seg.begin(c, k)), seg.bytes(c, k),
                        ctx.deadline);
  };
  auto receive = [&](std::size_t j) {
    const std::size_t k = j / pass_steps;
    const auto t = static_cast<long long>(j % pass_steps);
    if (t < w - 1) {
      const std::size_t c = mod(r - t - 2, w);
      const std::size_t begin = seg.begin(c, k);
      const std::size_t nbytes = seg.bytes(c, k);
      if (nbytes == 0) return;
      ctx.transport.recv_with(
          left, step_tag(ctx, 0, j), nbytes,
          [&](std::size_t offset, const void* data, std::size_t n) {
            kernel.combine(at(work, begin + offset), data, at(in, begin + offset), n / es);
          },
          ctx.deadline);
      // The last step completes segment k of chunk r: Mean divides it now, before it is sent on.
      if (t == w - 2) kernel.finish(at(work, begin), nbytes / es, static_cast<int>(w));
      return;
    }
    const std::size_t c = mod(r - (t - (w - 1)) - 1, w);
    if (seg.bytes(c, k) == 0) return;
    ctx.transport.recv_into(left, step_tag(ctx, 0x8000, j), at(work, seg.begin(c, k)),
                            seg.bytes(c, k), ctx.deadline);
  };
  ring_pass(ctx, right, seg.per_chunk * pass_steps, send, receive);
}

}  // namespace

void ring_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                     const ReduceKernel& kernel, std::size_t segment_bytes) {
  ring_reduce_scatter_into(ctx, in, out, count, kernel, segment_bytes, true);
}

void ring_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                 const ReduceKernel& kernel, int root, std::size_t segment_bytes) {
  const std::size_t ws = static_cast<std::size_t>(ctx.world());
  const std::size_t es = kernel.element_size();
  // Root folds into `out` directly; the others need a scratch for the partials.
  std::vector<unsigned char> scratch;
  void* work = out;
  if (ctx.rank() != root) {
    scratch.resize(std::max<std::size_t>(1, count * es));
    work = scratch.data();
  }
  ring_reduce_scatter_into(ctx, in, work, count, kernel, segment_bytes, false);
  const std::uint64_t tag = ctx.tag + 0x8000;
  const auto mine = static_cast<std::size_t>(ctx.rank());
  const ChunkLayout chunks(count, ws, ctx.window);
  if (ctx.rank() != root) {
    ctx.transport.isend(root, tag, at(work, chunks.begin(mine) * es), chunks.size(mine) * es,
                        ctx.deadline);
    ctx.transport.wait_send(root, ctx.deadline);
    return;
  }
  std::vector<int> peers;
  std::vector<std::size_t> sizes;
  std::vector<void*> dsts;
  for (int p = 0; p < ctx.world(); ++p) {
    if (p == root) continue;
    const auto q = static_cast<std::size_t>(p);
    peers.push_back(p);
    sizes.push_back(chunks.size(q) * es);
    dsts.push_back(at(out, chunks.begin(q) * es));
  }
  if (peers.empty()) return;
  ctx.transport.recv_all_into(peers, tag, dsts, sizes, ctx.deadline);
}

void ring_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root,
                    std::size_t segment_bytes) {
  const long long w = ctx.world();
  if (w == 1) return;
  const long long v = static_cast<long long>(mod(ctx.rank() - root, w));  // position in chain
  const int next = static_cast<int>(mod(ctx.rank() + 1, w));
  const int prev = static_cast<int>(mod(ctx.rank() - 1, w));
  // Segment s is bytes [s * segment_bytes, ...), the last one short; 0 bytes is one message.
  const std::size_t segments =
      std::max<std::size_t>(1, (nbytes + segment_bytes - 1) / segment_bytes);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::size_t begin = std::min(nbytes, s * segment_bytes);
    const std::size_t length = std::min(segment_bytes, nbytes - begin);
    const std::uint64_t tag = ctx.tag + (s & 0x7FFF);
    if (v > 0) ctx.transport.recv_into(prev, tag, at(buf, begin), length, ctx.deadline);
    if (v + 1 < w) ctx.transport.isend(next, tag, at(buf, begin), length, ctx.deadline);
  }
  if (v + 1 < w) ctx.transport.wait_send(next, ctx.deadline);
}

}  // namespace ruccl
