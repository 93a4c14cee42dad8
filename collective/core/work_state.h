#pragma once
// WorkState: what a Work handle and the progress thread share for one started call (the public
// handle: collective/work.h). The progress thread runs `job`, which stores the result or the
// error; complete() wakes every waiter.
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/deadline.h"
#include "collective/engine/engine_factory.h"
#include "tensor/core/tensor.h"

namespace ruccl {

struct WorkState {
  /// The call's deadline (from the *_async call) and its name, for wait()'s bound.
  Deadline deadline = Deadline::after(std::chrono::milliseconds(0));
  /// Fails the group with `error` (wait() found the call still running after its deadline).
  std::function<void(const CollectiveError& error)> fail_group;
  /// The call's inputs, alive until the handle is gone.
  std::vector<Tensor> inputs;

  mutable std::mutex mutex;
  std::condition_variable completed_cv;
  bool completed = false;    // guarded by mutex
  std::exception_ptr error;  // written before completed
  Tensor result;             // written before completed
  std::vector<std::int64_t> recv_counts;

  void store(Tensor t) { result = std::move(t); }
  void store(std::optional<Tensor> t) {
    if (t.has_value()) result = std::move(*t);
  }
  void store(AllToAllVResult r) {
    result = std::move(r.output);
    recv_counts = std::move(r.recv_counts);
  }
  void store(bool /*barrier or send*/) {}

  /// Blocks until the call completes, at most until its deadline plus a grace for the engine to
  /// raise its own Timeout; then fails the group with Timeout (which ends the call). Rethrows the
  /// call's error.
  void wait();
  /// Blocks until the call completes, with no bound (after wait() failed the group).
  void wait_until_completed() {
    std::unique_lock<std::mutex> lock(mutex);
    completed_cv.wait(lock, [&] { return completed; });
  }

  /// Marks the call complete (with `error` when non-null) and wakes every waiter.
  void complete(std::exception_ptr e) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      error = std::move(e);
      completed = true;
    }
    completed_cv.notify_all();
  }
};

}  // namespace ruccl
