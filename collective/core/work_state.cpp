#include "collective/core/work_state.h"

namespace ruccl {

namespace {

// How long past the call's deadline wait() gives the engine to raise its own Timeout (which names
// the ranks that never arrived) before it fails the group itself: every engine wait has the same
// deadline, so this only ends a call an engine failed to bound.
constexpr std::chrono::seconds kEngineGrace{2};

}  // namespace

void WorkState::wait() {
  WorkState& s = *this;
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

}  // namespace ruccl
