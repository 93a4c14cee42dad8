#pragma once
// Work: the handle of a collective started with a Communicator's *_async form (c10d's Work).
//
//   Work w = comm.all_reduce_async(grad, ReduceOperation::Sum);
//   ...compute while the reduction moves...
//   Tensor sum = w.result();  // waits; rethrows the call's CollectiveError
//
// The call runs on the communicator's progress thread in the order this rank started its calls
// (docs/collectives.md, "Asynchronous collectives"). The handle keeps the call's input tensors
// alive until it completes (and while any peer may still read them, on failure too): the caller
// may drop its own references at once, but must not write into an input before the call completes.
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl {

struct WorkState;

/// A started collective: wait for it, poll it, read its error and its result. Cheap to copy:
/// copies refer to the same call. Safe to use from any thread.
class Work {
 public:
  /// An empty handle (default-constructed or moved-from): wait() and result() raise
  /// InvalidArgument, is_completed() is true.
  Work() = default;
  explicit Work(std::shared_ptr<WorkState> state) : state_(std::move(state)) {}

  /// Blocks (on a condition variable) until the call completes; rethrows its error, the same
  /// CollectiveError every rank gets. Bounded by the call's deadline (CallOptions::timeout or the
  /// communicator's, counted from the *_async call): a call still running then fails the group
  /// with Timeout.
  void wait() const;
  /// Whether the call has completed, successfully or not. Never blocks.
  bool is_completed() const;
  /// Whether the call completed without an error (false while it runs).
  bool is_success() const;
  /// The call's error once it completed with one; nullptr while it runs or after a success.
  std::exception_ptr exception() const;
  /// wait(), then the result: the tensor the blocking form returns; an undefined Tensor where it
  /// returns std::nullopt (reduce and gather off the root) or nothing (barrier, send);
  /// all_to_all_v's output rows.
  Tensor result() const;
  /// wait(), then all_to_all_v's received row counts per source rank (empty for other calls).
  std::vector<std::int64_t> recv_counts() const;

 private:
  std::shared_ptr<WorkState> state_;
  WorkState& state() const;
};

}  // namespace ruccl
