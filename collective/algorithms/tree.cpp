// Tree algorithms over virtual ranks v = (rank - root) mod W: v's children are v*k + 1 .. v*k + k
// (arity k), its parent (v - 1) / k. Reductions send *raw* inputs up the tree (each node forwards
// its subtree's inputs in preorder) and only the root folds, so the fold order stays canonical and
// results match every other algorithm bit for bit. This costs bandwidth, not latency: the tree is
// the small-message strategy (depth log_k W hops).
#include <algorithm>
#include <functional>
#include <vector>

#include "collective/algorithms/algorithm.h"

namespace ruccl {

namespace {

struct TreeShape {
  int world;
  int root;
  int arity;

  int real(int v) const { return (v + root) % world; }
  int virt(int r) const { return ((r - root) % world + world) % world; }
  std::vector<int> children(int v) const {
    std::vector<int> out;
    for (long long c = static_cast<long long>(v) * arity + 1;
         c <= static_cast<long long>(v) * arity + arity && c < world; ++c) {
      out.push_back(static_cast<int>(c));
    }
    return out;
  }
  int parent(int v) const { return (v - 1) / arity; }
  void preorder(int v, std::vector<int>& out) const {
    out.push_back(v);
    for (int c : children(v)) preorder(c, out);
  }
};

// Gathers every rank's `bytes` of `in` at root; calls at_root(data) on root with data[rank].
// A node with children stages its own input and its children's messages (each a subtree's inputs
// in preorder) in one buffer; the root folds from its staging once everything arrived.
void tree_gather_raw(const AlgorithmContext& ctx, const void* in, std::size_t bytes, int root,
                     int arity, const std::function<void(std::span<const void* const>)>& at_root) {
  const TreeShape tree{ctx.world(), root, arity};
  const int v = tree.virt(ctx.rank());
  const std::vector<int> kids = tree.children(v);
  std::vector<int> kid_ranks;
  std::vector<std::size_t> kid_bytes;
  std::vector<std::vector<int>> kid_orders;
  for (int c : kids) {
    kid_ranks.push_back(tree.real(c));
    kid_orders.emplace_back();
    tree.preorder(c, kid_orders.back());
    kid_bytes.push_back(kid_orders.back().size() * bytes);
  }
  if (kids.empty()) {
    if (v == 0) {  // world of 1
      const void* only[1] = {in};
      at_root(std::span<const void* const>(only, 1));
      return;
    }
    ctx.transport.isend(tree.real(tree.parent(v)), ctx.tag, in, bytes, ctx.deadline);
    ctx.transport.wait_send(tree.real(tree.parent(v)), ctx.deadline);
    return;
  }
  // staging = [own input | kid 0's subtree | kid 1's subtree | ...]
  std::vector<std::size_t> kid_offsets;
  std::size_t total = bytes;
  for (std::size_t b : kid_bytes) {
    kid_offsets.push_back(total);
    total += b;
  }
  std::vector<unsigned char> staging(std::max<std::size_t>(1, total));
  copy_bytes(staging.data(), in, bytes);
  std::vector<void*> kid_dsts;
  for (std::size_t off : kid_offsets) kid_dsts.push_back(staging.data() + off);
  ctx.transport.recv_all_into(kid_ranks, ctx.tag, kid_dsts, kid_bytes, ctx.deadline);
  if (v == 0) {
    std::vector<const void*> data(static_cast<std::size_t>(ctx.world()));
    data[static_cast<std::size_t>(ctx.rank())] = in;
    for (std::size_t i = 0; i < kids.size(); ++i) {
      for (std::size_t j = 0; j < kid_orders[i].size(); ++j) {
        data[static_cast<std::size_t>(tree.real(kid_orders[i][j]))] =
            staging.data() + kid_offsets[i] + j * bytes;
      }
    }
    at_root(data);
    return;
  }
  const int parent = tree.real(tree.parent(v));
  ctx.transport.isend(parent, ctx.tag, staging.data(), total, ctx.deadline);
  ctx.transport.wait_send(parent, ctx.deadline);
}

}  // namespace

void tree_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                 const ReduceKernel& kernel, int root, int arity) {
  tree_gather_raw(
      ctx, in, count * kernel.element_size(), root, arity, [&](std::span<const void* const> data) {
        fold_elements(kernel, out, data, ChunkLayout(count, data.size(), ctx.window), 0, count);
        kernel.finish(out, count, ctx.world());
      });
}

void tree_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                     const ReduceKernel& kernel, int arity) {
  tree_reduce(ctx, in, out, count, kernel, 0, arity);
  const AlgorithmContext down{ctx.transport, ctx.tag + 1, ctx.deadline};  // no reduction
  tree_broadcast(down, out, count * kernel.element_size(), 0, arity);
}

void tree_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root,
                    int arity) {
  const TreeShape tree{ctx.world(), root, arity};
  const int v = tree.virt(ctx.rank());
  if (v != 0) {
    ctx.transport.recv_into(tree.real(tree.parent(v)), ctx.tag, buf, nbytes, ctx.deadline);
  }
  const std::vector<int> kids = tree.children(v);
  for (int c : kids) ctx.transport.isend(tree.real(c), ctx.tag, buf, nbytes, ctx.deadline);
  for (int c : kids) ctx.transport.wait_send(tree.real(c), ctx.deadline);
}

}  // namespace ruccl
