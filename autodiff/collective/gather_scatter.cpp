// The data-moving differentiable collectives and their transposes, forward beside backward:
// all_gather <-> reduce_scatter_sum (reduce_scatter_mean: all_gather / W), all_to_all <->
// all_to_all; the _dim variants move the axis to the front and back (collective_call.h).
#include <algorithm>

#include "autodiff/collective/collective_call.h"
#include "autodiff/collective/collective_ops.h"
#include "autodiff/node.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff::collective {

namespace {

using detail::AxisArg;
using detail::DiffOp;
using detail::Phase;

// all_gather of `t` along `axis` (t's axis moved to the front and back).
Tensor gather_along(Communicator& comm, const Tensor& t, const AxisArg& axis,
                    const CallOptions& call) {
  Tensor out = comm.all_gather(detail::move_axis_to_front(t, axis.axis), call);
  return detail::move_front_to_axis(out, axis.axis);
}

// reduce_scatter (Sum or Mean) of `t` along `axis`.
Tensor scatter_along(Communicator& comm, const Tensor& t, const AxisArg& axis, ReduceOperation op,
                     const CallOptions& call) {
  return detail::with_axis_note(axis, t.shape(), [&] {
    Tensor out = comm.reduce_scatter(detail::move_axis_to_front(t, axis.axis), op, call);
    return detail::move_front_to_axis(out, axis.axis);
  });
}

// all_gather / all_gather_dim. `axis_given`: whether the caller named an axis (the _dim variant).
Var gather_op(const Var& x, std::int64_t axis_in, bool axis_given, Communicator& comm) {
  const DiffOp op = axis_given ? DiffOp::AllGatherDim : DiffOp::AllGather;
  const Tensor& xv = detail::value_of(x);
  const bool track = should_record({x});
  // Without an axis a 0-d input counts as [1] (the Communicator's rule), so axis 0 is valid.
  const AxisArg axis = axis_given ? detail::check_axis(axis_in, xv.dim())
                                  : detail::check_axis(0, std::max<std::int64_t>(xv.dim(), 1));
  const CallOptions call = detail::call_options(op, Phase::Forward, axis.word(), track);
  if (!axis.valid) {
    detail::with_invalid_axis_note(
        comm, axis, [&] { comm.all_gather(detail::invalid_axis_stand_in(xv), call); });
    detail::throw_invalid_axis(op, axis);
  }
  Tensor out = gather_along(comm, xv, axis, call);
  return make_var(std::move(out), detail::op_name(op), {x},
                  [comm, axis, op](const Tensor& g, GradInputs& grads) mutable {
                    const CallOptions back =
                        detail::call_options(op, Phase::Backward, axis.word(), true);
                    Tensor gx = scatter_along(comm, g, axis, ReduceOperation::Sum, back);
                    grads[0] = gx.reshape(grads.input_shape(0));  // [1] -> [] for a 0-d input
                  });
}

// reduce_scatter_sum / _mean, with or without an axis.
Var scatter_op(const Var& x, std::int64_t axis_in, bool axis_given, bool mean, Communicator& comm) {
  const DiffOp op = mean ? (axis_given ? DiffOp::ReduceScatterMeanDim : DiffOp::ReduceScatterMean)
                         : (axis_given ? DiffOp::ReduceScatterSumDim : DiffOp::ReduceScatterSum);
  const Tensor& xv = detail::value_of(x);
  const bool track = should_record({x});
  // Without an axis, a 0-d input reaches the Communicator, which rejects it on every rank.
  const AxisArg axis = axis_given ? detail::check_axis(axis_in, xv.dim())
                                  : detail::check_axis(0, std::max<std::int64_t>(xv.dim(), 1));
  const CallOptions call = detail::call_options(op, Phase::Forward, axis.word(), track);
  const ReduceOperation rop = mean ? ReduceOperation::Mean : ReduceOperation::Sum;
  if (!axis.valid) {
    detail::with_invalid_axis_note(
        comm, axis, [&] { comm.reduce_scatter(detail::invalid_axis_stand_in(xv), rop, call); });
    detail::throw_invalid_axis(op, axis);
  }
  Tensor out = scatter_along(comm, xv, axis, rop, call);
  return make_var(std::move(out), detail::op_name(op), {x},
                  [comm, axis, op, mean](const Tensor& g, GradInputs& grads) mutable {
                    const CallOptions back =
                        detail::call_options(op, Phase::Backward, axis.word(), true);
                    // Mean: scale the shard before gathering (the same value per element as
                    // scaling the gathered tensor, W times less work).
                    const Tensor shard = mean ? ruccl::div(g, comm.world_size()) : g;
                    grads[0] = gather_along(comm, shard, axis, back);
                  });
}

}  // namespace

Var all_gather(const Var& x, Communicator& comm) { return gather_op(x, 0, false, comm); }

Var all_gather_dim(const Var& x, std::int64_t axis, Communicator& comm) {
  return gather_op(x, axis, true, comm);
}

Var reduce_scatter_sum(const Var& x, Communicator& comm) {
  return scatter_op(x, 0, false, false, comm);
}

Var reduce_scatter_sum_dim(const Var& x, std::int64_t axis, Communicator& comm) {
  return scatter_op(x, axis, true, false, comm);
}

Var reduce_scatter_mean(const Var& x, Communicator& comm) {
  return scatter_op(x, 0, false, true, comm);
}

Var reduce_scatter_mean_dim(const Var& x, std::int64_t axis, Communicator& comm) {
  return scatter_op(x, axis, true, true, comm);
}

Var all_to_all(const Var& x, Communicator& comm) {
  const bool track = should_record({x});
  const CallOptions call = detail::call_options(DiffOp::AllToAll, Phase::Forward, 0, track);
  Tensor out = comm.all_to_all(detail::value_of(x), call);
  return make_var(
      std::move(out), "all_to_all", {x}, [comm](const Tensor& g, GradInputs& grads) mutable {
        grads[0] =
            comm.all_to_all(g, detail::call_options(DiffOp::AllToAll, Phase::Backward, 0, true));
      });
}

}  // namespace ruccl::autodiff::collective
