// Log-step algorithms (Algorithm::RecursiveDoubling) for any W, powers of two or not: ceil(log2 W)
// rounds, in each of which what a rank holds (or how many ranks hold it) doubles.
//
// - all_gather, Bruck's concatenation: in round k (distance d = 2^k) rank r sends the first
//   min(d, W - d) blocks it holds to rank r - d and appends as many from rank r + d; block i then
//   holds rank (r + i) % W's input, and a final rotation puts the blocks in rank order.
// - all_reduce: Bruck's all-gather of the *raw* inputs, then every rank folds all W of them
//   locally in the canonical order (fold window included): the same bits as every other
//   linear-fold algorithm, in ceil(log2 W) rounds, for (W - 1) * S bytes received per rank and
//   W * S of fold work. The small-message path for many ranks.
// - broadcast: a binomial tree over virtual ranks v = (r - root) mod W: v receives from
//   v - lowbit(v), then sends to v + 2^j for the powers of two below lowbit(v) (root: below W),
//   largest first.
// - reduce: the same tree upwards, moving raw inputs: the subtree of v is the contiguous virtual
//   ranks [v, v + lowbit(v)), so a node stages its own input and its children's subtrees in
//   virtual-rank order and sends them on in one message; root folds all W canonically.
#include <algorithm>
#include <memory>

#include "collective/algorithms/algorithm.h"
#include "collective/algorithms/rank_vector.h"

namespace ruccl {

namespace {

unsigned char* at(void* p, std::size_t offset) { return static_cast<unsigned char*>(p) + offset; }

// Uninitialised staging (every byte is received or copied before it is read): a vector would
// zero W * S bytes first.
std::unique_ptr<unsigned char[]> staging_of(std::size_t bytes) {
  return std::unique_ptr<unsigned char[]>(new unsigned char[std::max<std::size_t>(1, bytes)]);
}

// Virtual ranks of a binomial tree rooted at `root`.
struct Binomial {
  int world;
  int root;
  int real(int v) const { return (v + root) % world; }
  int virt(int r) const { return (r - root + world) % world; }
  // The lowest set bit of v; for the root, the first power of two >= world.
  int span(int v) const {
    if (v != 0) return v & -v;
    int m = 1;
    while (m < world) m <<= 1;
    return m;
  }
  // Ranks in v's subtree: [v, v + span(v)) cut at world.
  int subtree(int v) const { return std::min(span(v), world - v); }
};

// Bruck's all-gather into `blocks` (W * block_bytes): block i gets rank (rank + i) % W's input.
void bruck_gather(const AlgorithmContext& ctx, const void* in, void* blocks,
                  std::size_t block_bytes) {
  const int w = ctx.world();
  const int r = ctx.rank();
  copy_bytes(blocks, in, block_bytes);
  RankVector<int> sent_to;
  std::uint64_t round = 0;
  for (int d = 1; d < w; d <<= 1, ++round) {
    const auto n = static_cast<std::size_t>(std::min(d, w - d));
    const int to = (r - d + w) % w;
    const int from = (r + d) % w;
    ctx.transport.isend(to, ctx.tag + round, blocks, n * block_bytes, ctx.deadline);
    sent_to.push_back(to);
    ctx.transport.recv_into(from, ctx.tag + round,
                            at(blocks, static_cast<std::size_t>(d) * block_bytes), n * block_bytes,
                            ctx.deadline);
  }
  for (int p : sent_to) ctx.transport.wait_send(p, ctx.deadline);  // distinct peers
}

}  // namespace

void recursive_doubling_all_gather(const AlgorithmContext& ctx, const void* in, void* out,
                                   std::size_t block_bytes) {
  const auto w = static_cast<std::size_t>(ctx.world());
  const auto r = static_cast<std::size_t>(ctx.rank());
  if (r == 0) {  // block i is rank i's already
    bruck_gather(ctx, in, out, block_bytes);
    return;
  }
  const auto blocks = staging_of(w * block_bytes);
  bruck_gather(ctx, in, blocks.get(), block_bytes);
  for (std::size_t i = 0; i < w; ++i) {
    copy_bytes(at(out, ((r + i) % w) * block_bytes), blocks.get() + i * block_bytes, block_bytes);
  }
}

void recursive_doubling_all_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                                   std::size_t count, const ReduceKernel& kernel) {
  const auto w = static_cast<std::size_t>(ctx.world());
  const auto r = static_cast<std::size_t>(ctx.rank());
  const std::size_t bytes = count * kernel.element_size();
  const auto blocks = staging_of(w * bytes);
  RankVector<const void*> data(w);
  bruck_gather(ctx, in, blocks.get(), bytes);
  for (std::size_t i = 0; i < w; ++i) data[(r + i) % w] = blocks.get() + i * bytes;
  fold_elements(kernel, out, data, ChunkLayout(count, w, ctx.window), 0, count);
  kernel.finish(out, count, ctx.world());
}

void recursive_doubling_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes,
                                  int root) {
  const Binomial tree{ctx.world(), root};
  const int v = tree.virt(ctx.rank());
  const int span = tree.span(v);
  if (v != 0) ctx.transport.recv_into(tree.real(v - span), ctx.tag, buf, nbytes, ctx.deadline);
  RankVector<int> kids;
  for (int m = span >> 1; m > 0; m >>= 1) {
    if (v + m < ctx.world()) kids.push_back(tree.real(v + m));
  }
  for (int k : kids) ctx.transport.isend(k, ctx.tag, buf, nbytes, ctx.deadline);
  for (int k : kids) ctx.transport.wait_send(k, ctx.deadline);
}

void recursive_doubling_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                               std::size_t count, const ReduceKernel& kernel, int root) {
  const int w = ctx.world();
  const Binomial tree{w, root};
  const int v = tree.virt(ctx.rank());
  const int span = tree.span(v);
  const std::size_t bytes = count * kernel.element_size();
  // staging = the inputs of virtual ranks [v, v + subtree(v)) in order; children v + m land at m.
  RankVector<int> kids;
  RankVector<void*> dsts;
  RankVector<std::size_t> sizes;
  std::unique_ptr<unsigned char[]> staging;
  if (span > 1 && v + 1 < w) {
    staging = staging_of(static_cast<std::size_t>(tree.subtree(v)) * bytes);
    copy_bytes(staging.get(), in, bytes);
    for (int m = 1; m < span && v + m < w; m <<= 1) {
      kids.push_back(tree.real(v + m));
      dsts.push_back(staging.get() + static_cast<std::size_t>(m) * bytes);
      sizes.push_back(static_cast<std::size_t>(tree.subtree(v + m)) * bytes);
    }
    ctx.transport.recv_all_into(kids, ctx.tag, dsts, sizes, ctx.deadline);
  }
  if (v != 0) {
    const int parent = tree.real(v - span);
    const void* message = kids.empty() ? in : staging.get();
    ctx.transport.isend(parent, ctx.tag, message, static_cast<std::size_t>(tree.subtree(v)) * bytes,
                        ctx.deadline);
    ctx.transport.wait_send(parent, ctx.deadline);
    return;
  }
  RankVector<const void*> data(static_cast<std::size_t>(w));
  data[static_cast<std::size_t>(root)] = in;
  for (int i = 1; i < w; ++i) {
    data[static_cast<std::size_t>(tree.real(i))] =
        staging.get() + static_cast<std::size_t>(i) * bytes;
  }
  fold_elements(kernel, out, data, ChunkLayout(count, static_cast<std::size_t>(w), ctx.window), 0,
                count);
  kernel.finish(out, count, w);
}

}  // namespace ruccl
