#include "collective/work.h"

#include "collective/core/work_state.h"

namespace ruccl {

WorkState& Work::state() const {
  if (state_ == nullptr) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          "Work: expected a handle returned by a *_async call, got an empty one");
  }
  return *state_;
}

void Work::wait() const { state().wait(); }

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
