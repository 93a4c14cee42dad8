// The region ops (region_ops.h), forward beside backward: copy_to_region (identity ->
// all_reduce_sum), reduce_from_region (all_reduce_sum -> identity), scatter_to_region (own block
// -> all_gather), gather_from_region (all_gather -> own block).
#include "autodiff/collective/region_ops.h"

#include "autodiff/collective/collective_call.h"
#include "autodiff/node.h"
#include "tensor/core/error.h"

namespace ruccl::autodiff::collective {

namespace {

using detail::AxisArg;
using detail::DiffOp;
using detail::Phase;

// Block `rank` of `t` along `axis` (its length divides by `world`), contiguous.
Tensor own_block(const Tensor& t, std::int64_t axis, int rank, int world) {
  const std::int64_t len = t.shape()[static_cast<std::size_t>(axis)] / world;
  return t.narrow(axis, rank * len, len).contiguous();
}

Tensor gather_along(Communicator& comm, const Tensor& t, std::int64_t axis,
                    const CallOptions& call) {
  return detail::move_front_to_axis(comm.all_gather(detail::move_axis_to_front(t, axis), call),
                                    axis);
}

}  // namespace

Var copy_to_region(const Var& x, Communicator& comm) {
  return make_var(detail::value_of(x), "copy_to_region", {x},
                  [comm](const Tensor& g, GradInputs& grads) mutable {
                    grads[0] = comm.all_reduce(
                        g, ReduceOperation::Sum,
                        detail::call_options(DiffOp::CopyToRegion, Phase::Backward, 0, true));
                  });
}

Var reduce_from_region(const Var& x, Communicator& comm) {
  const bool track = should_record({x});
  Tensor out =
      comm.all_reduce(detail::value_of(x), ReduceOperation::Sum,
                      detail::call_options(DiffOp::ReduceFromRegion, Phase::Forward, 0, track));
  return make_var(std::move(out), "reduce_from_region", {x},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = g; });
}

Var scatter_to_region(const Var& x, std::int64_t axis_in, Communicator& comm) {
  RUCCL_CHECK(x.defined(), ValueError, "scatter_to_region: expected a defined input");
  const Tensor& xv = x.value();
  const AxisArg axis = detail::check_axis(axis_in, xv.dim());
  if (!axis.valid) detail::throw_invalid_axis(DiffOp::ScatterToRegion, axis);
  const int world = comm.world_size();
  const std::int64_t len = xv.shape()[static_cast<std::size_t>(axis.axis)];
  RUCCL_CHECK(len % world == 0, ShapeError, "scatter_to_region: expected dim ", axis.raw,
              " of the input divisible by the group size ", world, ", got shape ", xv.shape());
  return make_var(
      own_block(xv, axis.axis, comm.rank(), world), "scatter_to_region", {x},
      [comm, axis](const Tensor& g, GradInputs& grads) mutable {
        grads[0] = gather_along(
            comm, g, axis.axis,
            detail::call_options(DiffOp::ScatterToRegion, Phase::Backward, axis.word(), true));
      });
}

Var gather_from_region(const Var& x, std::int64_t axis_in, Communicator& comm) {
  const DiffOp op = DiffOp::GatherFromRegion;
  const Tensor& xv = detail::value_of(x);
  const bool track = should_record({x});
  const AxisArg axis = detail::check_axis(axis_in, xv.dim());
  const CallOptions call = detail::call_options(op, Phase::Forward, axis.word(), track);
  if (!axis.valid) {
    // The call still runs, so that a mistake on some ranks fails every rank (collective_call.h).
    detail::with_invalid_axis_note(
        comm, axis, [&] { comm.all_gather(detail::invalid_axis_stand_in(xv), call); });
    detail::throw_invalid_axis(op, axis);
  }
  return make_var(
      gather_along(comm, xv, axis.axis, call), "gather_from_region", {x},
      [rank = comm.rank(), world = comm.world_size(), axis](const Tensor& g, GradInputs& grads) {
        grads[0] = own_block(g, axis.axis, rank, world);
      });
}

}  // namespace ruccl::autodiff::collective
