#include "collective/work.h"

#include "collective/core/work_state.h"

namespace ruccl {

namespace {

// How long past the call's deadline wait() gives the engine to raise its own Timeout (which names
// the ranks that never arrived) before it fails the group itself: every engine wait has the same
// deadline, so this only ends a call an engine failed to bound.
constexpr std::chrono::seconds kEngineGrace{2};

}  // namespace

WorkState& Work::state() const {
  if (state_ == nullptr) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          "Work: expected a handle returned by a *_async call, got an empty one");
  }
  return *state_;
}

void Work::wait() const {
  WorkState& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.completed_cv.wait_until(lock, s.deadline.at() + kEngineGrace,
                                 [&] { return s.completed; })) {
    lock.unlock();
    const CollectiveError timeout(
        CollectiveErrorKind::Timeout,
        str(s.deadline.call_name(), ": expected it to complete within its timeout of ",
            s.deadline.timeout().count(), " ms, got it still running (Work::wait)"));
    s.fail_group(timeout);  // wakes the progress thread's waits: the call ends with an error
    lock.lock();
    if (!s.completed_cv.wait_for(lock, kEngineGrace, [&] { return s.completed; })) throw timeout;
  }
  if (s.error) std::rethrow_exception(s.error);
}

bool Work::is_completed() const {
  if (state_ == nullptr) return true;
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed;
}

bool Work::is_success() const {
  if (state_ == nullptr) return false;
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed && !state_->error;
}

std::exception_ptr Work::exception() const {
  if (state_ == nullptr) return nullptr;
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed ? state_->error : nullptr;
}

Tensor Work::result() const {
  wait();
  return state_->result;
}

std::vector<std::int64_t> Work::recv_counts() const {
  wait();
  return state_->recv_counts;
}

}  // namespace ruccl
