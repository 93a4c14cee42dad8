#pragma once
// Differentiable collectives: Communicator collectives as tape nodes whose backward is the
// collective that mirrors the forward (docs/autodiff.md §9 derives each rule).
//
// Gradient convention: the objective is the SUM of the per-rank losses, F = sum_r L_r. Each
// backward is the linear transpose of its forward:
//
//   forward                      backward (g_r: d L / d output on rank r)
//   all_gather                   reduce_scatter_sum(g)
//   reduce_scatter_sum           all_gather(g)
//   reduce_scatter_mean          all_gather(g) / W
//   all_reduce_sum               all_reduce_sum(g)
//   all_reduce_mean              all_reduce_sum(g) / W
//   all_reduce_max / _min        all_reduce_sum(g), kept only where this rank's value won
//   broadcast(root)              sum of every rank's g on root, zeros on the other ranks
//   all_to_all                   all_to_all(g) (routes every piece back where it came from)
//   *_dim(axis)                  the same, with `axis` moved to the front and back
//
// If your loss is REPLICATED (every rank computes the same loss, e.g. after all_reduce_mean of
// the per-rank losses) rather than one term of a sum, F counts it W times: divide the replicated
// loss by W before backward (or the resulting gradients by W). Tensor-parallel code instead marks
// its replicated values with the region ops (region_ops.h), under which a replicated loss counts
// once.
//
// Rules every rank must follow (all are checked; a violation raises CollectiveError on every rank,
// never a hang or a wrong result):
// - call the same differentiable collectives in the same order, with the same shape, dtype, root
//   and axis, and with the same answer to "does the input need a gradient" (requires_grad and
//   grad mode); an input that needs none records no node but still communicates;
// - in backward, reach the same collective nodes: backward() runs them in reverse creation order
//   (autodiff/engine.h), which is the same on every rank whatever local ops each rank added, but a
//   node whose output does not reach a rank's loss is skipped by that rank's backward. If a rank's
//   loss does not use a collective's output, add 0 * sum(output) to it.
//
//   auto comms = InProcessGroup::create(2);
//   // rank r's thread:
//   Var h = all_gather_dim(relu(linear(x, w1_shard)), -1, comms[r]);   // [B, hidden]
//   Var loss = mse_loss(linear(h, w2), y);
//   loss.backward();                                 // w1_shard.grad() is this rank's slice
//
// Every op accepts non-contiguous and empty inputs, returns a new tensor (the input is never
// modified) and gives the input's gradient in the input's shape and dtype (a leaf's stored
// gradient also keeps a transposed or permuted input's strides: autodiff/engine.h). The dtype
// must be one the Communicator moves (floating, I32, I64); gradients need a floating dtype.
#include <cstdint>

#include "autodiff/var.h"
#include "collective/communicator.h"

namespace ruccl::autodiff::collective {

/// Concatenation of every rank's `x` along axis 0 in rank order: [W*d0, ...] (a 0-d `x` counts
/// as [1]). Backward: reduce_scatter_sum of the gradient.
Var all_gather(const Var& x, Communicator& comm);
/// all_gather along `axis` (negative counts from the end): d_axis becomes W*d_axis.
Var all_gather_dim(const Var& x, std::int64_t axis, Communicator& comm);

/// Sum over ranks, then rank r keeps block r of axis 0 (d0 must divide by W, else CollectiveError
/// InvalidArgument on every rank): [d0/W, ...]. Backward: all_gather of the gradient.
Var reduce_scatter_sum(const Var& x, Communicator& comm);
/// reduce_scatter_sum along `axis`.
Var reduce_scatter_sum_dim(const Var& x, std::int64_t axis, Communicator& comm);
/// reduce_scatter_sum / W. Backward: all_gather of the gradient, / W.
Var reduce_scatter_mean(const Var& x, Communicator& comm);
/// reduce_scatter_mean along `axis`.
Var reduce_scatter_mean_dim(const Var& x, std::int64_t axis, Communicator& comm);

/// Elementwise sum over ranks. Backward: all_reduce_sum of the gradient.
Var all_reduce_sum(const Var& x, Communicator& comm);
/// Elementwise mean over ranks (sum / W). Backward: all_reduce_sum of the gradient, / W.
Var all_reduce_mean(const Var& x, Communicator& comm);
/// Elementwise maximum over ranks. The gradient of each element (the sum of every rank's incoming
/// gradient) goes to the rank whose value won; on ties to the LOWEST rank among those holding the
/// maximum; where the result is NaN, to nobody. Recording the node costs one extra small
/// all_reduce in forward (electing the winners).
Var all_reduce_max(const Var& x, Communicator& comm);
/// Elementwise minimum over ranks; gradient routing as all_reduce_max.
Var all_reduce_min(const Var& x, Communicator& comm);

/// Every rank gets root's `x`. Non-roots pass a Var of root's shape and dtype (its value is not
/// used; an undefined Var is accepted when root's input needs no gradient). Backward: root's
/// gradient is the sum of every rank's incoming gradient; the other ranks' inputs get zeros.
Var broadcast(const Var& x, int root, Communicator& comm);

/// Rank r's `x` is split in W blocks along axis 0 (d0 divisible by W); block j goes to rank j,
/// and the result holds the blocks from ranks 0..W-1 in order (same shape as `x`). Backward:
/// all_to_all of the gradient.
Var all_to_all(const Var& x, Communicator& comm);

}  // namespace ruccl::autodiff::collective
