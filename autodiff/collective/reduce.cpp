// The reducing differentiable collectives and broadcast, forward beside backward:
// all_reduce_sum -> all_reduce_sum, all_reduce_mean -> all_reduce_sum / W, all_reduce_max/min ->
// all_reduce_sum routed to the winning rank, broadcast(root) -> reduce to root (zeros elsewhere).
#include <optional>

#include "autodiff/collective/collective_call.h"
#include "autodiff/collective/collective_ops.h"
#include "autodiff/node.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff::collective {

namespace {

using detail::DiffOp;
using detail::Phase;

// all_reduce_sum / all_reduce_mean: backward is the same all_reduce of the gradient (Mean is
// sum / W, the transpose of the forward's sum / W).
Var linear_reduce(const Var& x, Communicator& comm, bool mean) {
  const DiffOp op = mean ? DiffOp::AllReduceMean : DiffOp::AllReduceSum;
  const ReduceOperation rop = mean ? ReduceOperation::Mean : ReduceOperation::Sum;
  const bool track = should_record({x});
  Tensor out =
      comm.all_reduce(detail::value_of(x), rop, detail::call_options(op, Phase::Forward, 0, track));
  return make_var(std::move(out), detail::op_name(op), {x},
                  [comm, op, rop](const Tensor& g, GradInputs& grads) mutable {
                    grads[0] =
                        comm.all_reduce(g, rop, detail::call_options(op, Phase::Backward, 0, true));
                  });
}

// all_reduce_max / all_reduce_min. The winner of each element is the lowest rank whose value
// equals the result: every rank proposes its rank where it holds the result and W elsewhere, and
// an all_reduce(Min) of the proposals elects the winners (NaN equals nothing: no winner).
Var extreme_reduce(const Var& x, Communicator& comm, bool is_max) {
  const DiffOp op = is_max ? DiffOp::AllReduceMax : DiffOp::AllReduceMin;
  const ReduceOperation rop = is_max ? ReduceOperation::Max : ReduceOperation::Min;
  const bool track = should_record({x});
  const Tensor& xv = detail::value_of(x);
  Tensor out = comm.all_reduce(xv, rop, detail::call_options(op, Phase::Forward, 0, track));
  if (!track) return Var(std::move(out));

  const Device device = xv.device();
  const Tensor proposal = where(eq(xv, out), Tensor::scalar(comm.rank(), DType::I32, device),
                                Tensor::scalar(comm.world_size(), DType::I32, device));
  const Tensor winner = comm.all_reduce(proposal, ReduceOperation::Min,
                                        detail::call_options(op, Phase::Winner, 0, true));
  Tensor won = eq(winner, Scalar(comm.rank()));  // Bool, x's shape: this rank's elements
  return make_var(std::move(out), detail::op_name(op), {x},
                  [comm, op, won = std::move(won)](const Tensor& g, GradInputs& grads) mutable {
                    const Tensor total =
                        comm.all_reduce(g, ReduceOperation::Sum,
                                        detail::call_options(op, Phase::Backward, 0, true));
                    grads[0] = where(won, total, Tensor::scalar(0, total.dtype(), total.device()));
                  });
}

}  // namespace

Var all_reduce_sum(const Var& x, Communicator& comm) { return linear_reduce(x, comm, false); }

Var all_reduce_mean(const Var& x, Communicator& comm) { return linear_reduce(x, comm, true); }

Var all_reduce_max(const Var& x, Communicator& comm) { return extreme_reduce(x, comm, true); }

Var all_reduce_min(const Var& x, Communicator& comm) { return extreme_reduce(x, comm, false); }

Var broadcast(const Var& x, int root, Communicator& comm) {
  const bool track = should_record({x});
  Tensor out = comm.broadcast(detail::value_of(x), root,
                              detail::call_options(DiffOp::Broadcast, Phase::Forward, 0, track));
  return make_var(
      std::move(out), "broadcast", {x}, [comm, root](const Tensor& g, GradInputs& grads) mutable {
        std::optional<Tensor> total =
            comm.reduce(g, root, ReduceOperation::Sum,
                        detail::call_options(DiffOp::Broadcast, Phase::Backward, 0, true));
        grads[0] = total ? std::move(*total)
                         : Tensor::zeros(grads.input_shape(0), grads.input_dtype(0), g.device());
      });
}

}  // namespace ruccl::autodiff::collective
