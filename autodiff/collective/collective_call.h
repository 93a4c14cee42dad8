#pragma once
// How a differentiable collective issues its Communicator calls (internal to
// autodiff/collective): the fingerprint words every rank must agree on, and the axis handling of
// the _dim variants.
//
// Words. Each forward call carries {"op": which differentiable op, "axis", "requires_grad":
// whether this rank records a node}; each backward call carries {"op": the op's code plus
// kBackwardPhase, "axis"}. The Communicator compares them on every call, so ranks that disagree on
// the op, the axis or whether a gradient is wanted, or whose backward passes reach different
// collective nodes, all raise CollectiveError (ArgumentMismatch or CollectiveKindMismatch) instead
// of computing something wrong or hanging.
//
// Axes. A _dim variant moves its axis to the front (a permute view), runs the axis-0 collective
// and moves the axis back. An axis that is out of range on this rank still takes part in the call
// (with an empty stand-in tensor and the word axis = -1, which no valid axis equals), so that a
// mistake on some ranks raises ArgumentMismatch on every rank and a mistake on all ranks raises the
// local IndexError on every rank; nobody is left waiting.
#include <cstdint>

#include "autodiff/var.h"
#include "collective/communicator.h"
#include "collective/protocol/call_options.h"
#include "tensor/core/tensor.h"

namespace ruccl::autodiff::collective::detail {

/// The differentiable ops, as fingerprint codes (values are part of the wire agreement).
enum class DiffOp : std::int64_t {
  AllGather = 1,
  AllGatherDim = 2,
  ReduceScatterSum = 3,
  ReduceScatterSumDim = 4,
  ReduceScatterMean = 5,
  ReduceScatterMeanDim = 6,
  AllReduceSum = 7,
  AllReduceMean = 8,
  AllReduceMax = 9,
  AllReduceMin = 10,
  Broadcast = 11,
  AllToAll = 12,
  CopyToRegion = 13,
  ReduceFromRegion = 14,
  ScatterToRegion = 15,
  GatherFromRegion = 16,
};

/// The phases of one op: its forward call, the winner election of max/min (forward, only when a
/// gradient is wanted) and its backward call.
enum class Phase : std::int64_t { Forward = 0, Winner = 1000, Backward = 2000 };

/// The op's public name ("all_gather_dim"), for labels and messages.
const char* op_name(DiffOp op);
/// The label of a call of `op` in `phase` ("all_gather_dim", "backward of all_gather_dim").
const char* call_label(DiffOp op, Phase phase);

/// The CallOptions of a call: label, and the words op (code + phase), axis and, in forward phases,
/// requires_grad.
CallOptions call_options(DiffOp op, Phase phase, std::int64_t axis_word, bool requires_grad);

/// An axis argument checked against this rank's tensor.
struct AxisArg {
  bool valid = false;
  std::int64_t axis = 0;  ///< normalised to [0, ndim) when valid
  std::int64_t raw = 0;   ///< as the caller passed it
  std::int64_t ndim = 0;
  /// The fingerprint word: the normalised axis, or -1 when invalid.
  std::int64_t word() const { return valid ? axis : -1; }
};

/// Checks `axis` against an `ndim`-dimensional tensor (negative counts from the end).
AxisArg check_axis(std::int64_t axis, std::int64_t ndim);
/// Throws the IndexError of an invalid axis, naming `op` (after the call every rank made).
[[noreturn]] void throw_invalid_axis(DiffOp op, const AxisArg& axis);

/// A view of `t` with dim `axis` first and the others in order.
Tensor move_axis_to_front(const Tensor& t, std::int64_t axis);
/// The inverse of move_axis_to_front: dim 0 of `t` goes back to position `axis`. Contiguous.
Tensor move_front_to_axis(const Tensor& t, std::int64_t axis);
/// x's value, or an undefined Tensor for an undefined Var (which the Communicator then rejects on
/// every rank, instead of this rank failing alone and leaving the others waiting).
const Tensor& value_of(const Var& x);

/// The stand-in a rank with an invalid axis sends: an empty [0] tensor of the input's dtype and
/// device.
Tensor invalid_axis_stand_in(const Tensor& input);

/// Runs `call()` and, when it raises CollectiveError InvalidArgument (the axis-0 length does not
/// divide by the world size), rethrows it with a note naming the caller's axis and shape.
template <typename Call>
auto with_axis_note(const AxisArg& axis, const Shape& shape, Call&& call) -> decltype(call());

/// Runs the stand-in call of a rank whose axis is invalid; when the call raises CollectiveError
/// (the other ranks' axes were valid), rethrows it with a note naming this rank's bad axis.
template <typename Call>
void with_invalid_axis_note(const Communicator& comm, const AxisArg& axis, Call&& call);

/// Rethrows the current CollectiveError with `note` appended (same kind and ranks).
[[noreturn]] void rethrow_with_note(const CollectiveError& error, const std::string& note);

template <typename Call>
auto with_axis_note(const AxisArg& axis, const Shape& shape, Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const CollectiveError& e) {
    if (e.kind() != CollectiveErrorKind::InvalidArgument || axis.axis == 0) throw;
    rethrow_with_note(
        e, str(" (the caller's axis ", axis.raw, " of shape ", shape, " was moved to the front)"));
  }
}

template <typename Call>
void with_invalid_axis_note(const Communicator& comm, const AxisArg& axis, Call&& call) {
  try {
    call();
  } catch (const CollectiveError& e) {
    rethrow_with_note(e, str(" (on rank ", comm.rank(), " the axis ", axis.raw,
                             " is out of range for a ", axis.ndim, "-d input)"));
  }
}

}  // namespace ruccl::autodiff::collective::detail
