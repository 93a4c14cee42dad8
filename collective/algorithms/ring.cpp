// Ring algorithms: rank r only talks to its neighbours, left = r - 1 and right = r + 1 (mod W).
// Reduce-scatter: in step s (0 .. W-2) rank r sends the partial of chunk (r - s - 1) to the right
// and folds its own contribution into the partial of chunk (r - s - 2) that arrives from the left,
// so chunk c starts at rank c + 1, meets ranks c + 2, ..., and ends complete on rank c: exactly
// the canonical order. All-gather: in step s rank r forwards chunk (r - s) to the right.
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

// Ring reduce-scatter over whole buffers: `work` (count elements) receives the partials; on
// return chunk `rank` of `work` holds the complete fold (Mean applied).
void ring_reduce_scatter_into(const AlgorithmContext& ctx, const void* in, void* work,
                              std::size_t count, const ReduceKernel& kernel) {
  const long long w = ctx.world();
  const long long r = ctx.rank();
  const std::size_t ws = static_cast<std::size_t>(w);
  const std::size_t es = kernel.element_size();
  const int right = static_cast<int>(mod(r + 1, w));
  const int left = static_cast<int>(mod(r - 1, w));
  for (long long s = 0; s + 1 < w; ++s) {
    const std::size_t send_c = mod(r - s - 1, w);
    const std::size_t recv_c = mod(r - s - 2, w);
    const void* partial = s == 0 ? at(in, chunk_begin(send_c, count, ws) * es)
                                 : at(work, chunk_begin(send_c, count, ws) * es);
    ctx.transport.isend(right, ctx.tag + static_cast<std::uint64_t>(s), partial,
                        chunk_size(send_c, count, ws) * es, ctx.deadline);
    const std::size_t begin = chunk_begin(recv_c, count, ws) * es;
    const std::size_t length = chunk_size(recv_c, count, ws);
    ctx.transport.recv_with(
        left, ctx.tag + static_cast<std::uint64_t>(s), length * es,
        [&](std::size_t offset, const void* data, std::size_t n) {
          kernel.combine(at(work, begin + offset), data, at(in, begin + offset), n / es);
        },
        ctx.deadline);
    ctx.transport.wait_send(right, ctx.deadline);
  }
  const std::size_t mine = static_cast<std::size_t>(r);
  if (w == 1) copy_bytes(work, in, count * es);
  kernel.finish(at(work, chunk_begin(mine, count, ws) * es), chunk_size(mine, count, ws),
                static_cast<int>(w));
}

}  // namespace

void ring_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                     const ReduceKernel& kernel) {
  ring_reduce_scatter_into(ctx, in, out, count, kernel);
  const long long w = ctx.world();
  const long long r = ctx.rank();
  const std::size_t ws = static_cast<std::size_t>(w);
  const std::size_t es = kernel.element_size();
  const int right = static_cast<int>(mod(r + 1, w));
  const int left = static_cast<int>(mod(r - 1, w));
  const std::uint64_t tag = ctx.tag + 0x8000;
  for (long long s = 0; s + 1 < w; ++s) {
    const std::size_t send_c = mod(r - s, w);
    const std::size_t recv_c = mod(r - s - 1, w);
    ctx.transport.isend(right, tag + static_cast<std::uint64_t>(s),
                        at(out, chunk_begin(send_c, count, ws) * es),
                        chunk_size(send_c, count, ws) * es, ctx.deadline);
    ctx.transport.recv_with(
        left, tag + static_cast<std::uint64_t>(s), chunk_size(recv_c, count, ws) * es,
        [&](std::size_t offset, const void* data, std::size_t n) {
          copy_bytes(at(out, chunk_begin(recv_c, count, ws) * es + offset), data, n);
        },
        ctx.deadline);
    ctx.transport.wait_send(right, ctx.deadline);
  }
}

void ring_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                 const ReduceKernel& kernel, int root) {
  const std::size_t ws = static_cast<std::size_t>(ctx.world());
  const std::size_t es = kernel.element_size();
  // Root folds into `out` directly; the others need a scratch for the partials.
  std::vector<unsigned char> scratch;
  void* work = out;
  if (ctx.rank() != root) {
    scratch.resize(std::max<std::size_t>(1, count * es));
    work = scratch.data();
  }
  ring_reduce_scatter_into(ctx, in, work, count, kernel);
  const std::uint64_t tag = ctx.tag + 0x8000;
  const auto mine = static_cast<std::size_t>(ctx.rank());
  if (ctx.rank() != root) {
    ctx.transport.isend(root, tag, at(work, chunk_begin(mine, count, ws) * es),
                        chunk_size(mine, count, ws) * es, ctx.deadline);
    ctx.transport.wait_send(root, ctx.deadline);
    return;
  }
  std::vector<int> peers;
  std::vector<std::size_t> sizes;
  for (int p = 0; p < ctx.world(); ++p) {
    if (p == root) continue;
    peers.push_back(p);
    sizes.push_back(chunk_size(static_cast<std::size_t>(p), count, ws) * es);
  }
  if (peers.empty()) return;
  ctx.transport.recv_all_with(
      peers, tag, sizes,
      [&](std::size_t offset, std::span<const void* const> received, std::size_t n) {
        for (std::size_t i = 0; i < peers.size(); ++i) {
          copy_bytes(
              at(out, chunk_begin(static_cast<std::size_t>(peers[i]), count, ws) * es + offset),
              received[i], piece_bytes(sizes[i], offset, n));
        }
      },
      ctx.deadline);
}

void ring_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root) {
  const long long w = ctx.world();
  if (w == 1) return;
  const long long v = static_cast<long long>(mod(ctx.rank() - root, w));  // position in chain
  const int next = static_cast<int>(mod(ctx.rank() + 1, w));
  const int prev = static_cast<int>(mod(ctx.rank() - 1, w));
  // Pipelined in segments so all links work at once on large messages.
  constexpr std::size_t kSegment = std::size_t{256} << 10;
  const std::size_t segments = std::max<std::size_t>(1, (nbytes + kSegment - 1) / kSegment);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::size_t begin = chunk_begin(s, nbytes, segments);
    const std::size_t length = chunk_size(s, nbytes, segments);
    const std::uint64_t tag = ctx.tag + (s & 0x7FFF);
    if (v > 0) {
      ctx.transport.recv_with(
          prev, tag, length,
          [&](std::size_t offset, const void* data, std::size_t n) {
            copy_bytes(at(buf, begin + offset), data, n);
          },
          ctx.deadline);
    }
    if (v + 1 < w) ctx.transport.isend(next, tag, at(buf, begin), length, ctx.deadline);
  }
  if (v + 1 < w) ctx.transport.wait_send(next, ctx.deadline);
}

}  // namespace ruccl
