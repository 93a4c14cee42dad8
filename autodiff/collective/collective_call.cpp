// Fingerprint words, labels and axis moves of the differentiable collectives.
#include "autodiff/collective/collective_call.h"

#include <vector>

#include "tensor/core/error.h"

namespace ruccl::autodiff::collective::detail {

namespace {

struct OpNames {
  const char* forward;
  const char* winner;
  const char* backward;
};

OpNames names(DiffOp op) {
  switch (op) {
    case DiffOp::AllGather:
      return {"all_gather", "all_gather", "backward of all_gather"};
    case DiffOp::AllGatherDim:
      return {"all_gather_dim", "all_gather_dim", "backward of all_gather_dim"};
    case DiffOp::ReduceScatterSum:
      return {"reduce_scatter_sum", "reduce_scatter_sum", "backward of reduce_scatter_sum"};
    case DiffOp::ReduceScatterSumDim:
      return {"reduce_scatter_sum_dim", "reduce_scatter_sum_dim",
              "backward of reduce_scatter_sum_dim"};
    case DiffOp::ReduceScatterMean:
      return {"reduce_scatter_mean", "reduce_scatter_mean", "backward of reduce_scatter_mean"};
    case DiffOp::ReduceScatterMeanDim:
      return {"reduce_scatter_mean_dim", "reduce_scatter_mean_dim",
              "backward of reduce_scatter_mean_dim"};
    case DiffOp::AllReduceSum:
      return {"all_reduce_sum", "all_reduce_sum", "backward of all_reduce_sum"};
    case DiffOp::AllReduceMean:
      return {"all_reduce_mean", "all_reduce_mean", "backward of all_reduce_mean"};
    case DiffOp::AllReduceMax:
      return {"all_reduce_max", "all_reduce_max (winner election)", "backward of all_reduce_max"};
    case DiffOp::AllReduceMin:
      return {"all_reduce_min", "all_reduce_min (winner election)", "backward of all_reduce_min"};
    case DiffOp::Broadcast:
      return {"broadcast", "broadcast", "backward of broadcast"};
    case DiffOp::AllToAll:
      return {"all_to_all", "all_to_all", "backward of all_to_all"};
    case DiffOp::CopyToRegion:
      return {"copy_to_region", "copy_to_region", "backward of copy_to_region"};
    case DiffOp::ReduceFromRegion:
      return {"reduce_from_region", "reduce_from_region", "backward of reduce_from_region"};
    case DiffOp::ScatterToRegion:
      return {"scatter_to_region", "scatter_to_region", "backward of scatter_to_region"};
    case DiffOp::GatherFromRegion:
      return {"gather_from_region", "gather_from_region", "backward of gather_from_region"};
  }
  return {"collective", "collective", "backward of collective"};
}

}  // namespace

const char* op_name(DiffOp op) { return names(op).forward; }

const char* call_label(DiffOp op, Phase phase) {
  const OpNames n = names(op);
  switch (phase) {
    case Phase::Forward:
      return n.forward;
    case Phase::Winner:
      return n.winner;
    case Phase::Backward:
      return n.backward;
  }
  return n.forward;
}

CallOptions call_options(DiffOp op, Phase phase, std::int64_t axis_word, bool requires_grad) {
  CallOptions call;
  call.with_label(call_label(op, phase))
      .with_word("op", static_cast<std::int64_t>(op) + static_cast<std::int64_t>(phase))
      .with_word("axis", axis_word);
  if (phase != Phase::Backward) call.with_word("requires_grad", requires_grad ? 1 : 0);
  return call;
}

AxisArg check_axis(std::int64_t axis, std::int64_t ndim) {
  AxisArg a;
  a.raw = axis;
  a.ndim = ndim;
  const std::int64_t n = axis < 0 ? axis + ndim : axis;
  a.valid = n >= 0 && n < ndim;
  a.axis = a.valid ? n : 0;
  return a;
}

void throw_invalid_axis(DiffOp op, const AxisArg& axis) {
  throw IndexError(str(op_name(op), ": expected an axis in [", -axis.ndim, ", ", axis.ndim,
                       ") for a ", axis.ndim, "-d input, got ", axis.raw));
}

Tensor move_axis_to_front(const Tensor& t, std::int64_t axis) {
  if (axis == 0) return t;
  std::vector<std::int64_t> perm;
  perm.reserve(static_cast<std::size_t>(t.dim()));
  perm.push_back(axis);
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (d != axis) perm.push_back(d);
  }
  return t.permute(perm);
}

Tensor move_front_to_axis(const Tensor& t, std::int64_t axis) {
  if (axis == 0) return t;
  // Output dim d comes from input dim: axis -> 0, d < axis -> d + 1, d > axis -> d.
  std::vector<std::int64_t> perm;
  perm.reserve(static_cast<std::size_t>(t.dim()));
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    perm.push_back(d == axis ? 0 : (d < axis ? d + 1 : d));
  }
  return t.permute(perm).contiguous();
}

const Tensor& value_of(const Var& x) {
  static const Tensor kUndefined;
  return x.defined() ? x.value() : kUndefined;
}

Tensor invalid_axis_stand_in(const Tensor& input) {
  if (!input.defined()) return Tensor();  // the Communicator rejects it on every rank
  return Tensor::empty(Shape{0}, input.dtype(), input.device());
}

void rethrow_with_note(const CollectiveError& error, const std::string& note) {
  throw CollectiveError(error.kind(), str(error.what(), note), error.ranks());
}

}  // namespace ruccl::autodiff::collective::detail
