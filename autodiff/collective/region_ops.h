#pragma once
// The region ops: where a value REPLICATED over a group (the same value on every rank, one
// variable of the model: an activation computed identically everywhere, a bias or LayerNorm
// weight every rank holds a copy of) meets values that are PER-RANK (a shard, or a partial sum
// that differs by rank). Megatron-LM's f / g operators ("copy to / reduce from the tensor-parallel
// region") and its scatter / gather pair.
//
// The rule (docs/autodiff.md §10 derives it; docs/parallelism.md shows it per layer):
// - a replicated value's gradient is the WHOLE gradient of that one variable, the same on every
//   rank; a per-rank value's gradient is this rank's own, as in §9 (the sum of per-rank losses);
// - a loss computed from replicated values is replicated: it counts ONCE (every rank runs
//   backward on it with seed 1; no loss / W);
// - a replicated value crosses into per-rank use only through copy_to_region or scatter_to_region,
//   and per-rank values become replicated only through reduce_from_region or gather_from_region.
//
//   forward (rank r, W ranks)                       backward (g: the incoming gradient)
//   copy_to_region        y_r = x        (none)     all_reduce_sum(g)   (x's uses on all ranks)
//   reduce_from_region    y = Σ_s x_s    all_reduce identity            (g is already the whole)
//   scatter_to_region     y_r = block r of x along axis (none)  all_gather of g along axis
//   gather_from_region    y = [x_0 … x_{W-1}] along axis        block r of g along axis
//
// Followed, the replicated parameters get the right gradient with no hand-written all-reduce and
// no loss / W, bit-identical on every rank (the rank's backward is the same computation on the
// same values everywhere, and the all_reduce gives every rank the same bits). Each pair is the
// other's transpose once the replicated value is counted as one variable: a function that enters
// its replicated inputs through reduce_from_region and leaves through copy_to_region is an
// ordinary per-rank function, which distributed_gradcheck checks
// (tests/autodiff/region_ops_test.cpp).
//
// The trap these ops close: a replicated loss fed by plain all_reduce_sum (whose backward is
// all_reduce_sum, §9) gives W x the gradient; a replicated value used by a shard without
// copy_to_region gives only this rank's share of its gradient.
//
// copy_to_region and scatter_to_region communicate only in backward: every rank of the group must
// record them alike (same requires_grad), as every differentiable collective; the backward call's
// fingerprint names the op.
//
//   // rank r of a tensor-parallel group `tp`; w1 column shard, w2 row shard, b replicated:
//   Var h = relu(linear(copy_to_region(x, tp), w1_shard));
//   Var y = add(reduce_from_region(linear(h, w2_shard), tp), b);   // replicated
//   mse_loss(y, target).backward();           // b.grad(): the whole gradient, on every rank
#include <cstdint>

#include "autodiff/var.h"
#include "collective/communicator.h"

namespace ruccl::autodiff::collective {

/// Identity in forward (no communication); backward all_reduce_sum of the gradient over `comm`.
/// Marks the replicated `x` as entering per-rank use.
Var copy_to_region(const Var& x, Communicator& comm);
/// all_reduce_sum over `comm` in forward; identity in backward. Turns per-rank partial sums into
/// one replicated value.
Var reduce_from_region(const Var& x, Communicator& comm);
/// Rank r keeps block r of the replicated `x` along `axis` (negative counts from the end; the
/// axis length must divide by the group size: ShapeError otherwise, IndexError for a bad axis);
/// no communication in forward. Backward: all_gather of the gradient along `axis`.
Var scatter_to_region(const Var& x, std::int64_t axis, Communicator& comm);
/// all_gather along `axis` in forward: the result is replicated. Backward: this rank's block of
/// the gradient along `axis` (no communication).
Var gather_from_region(const Var& x, std::int64_t axis, Communicator& comm);

}  // namespace ruccl::autodiff::collective
