#pragma once
// TcpTransport::drive, the one wait loop of the process transport (process_transport.cpp and
// process_progress.cpp use it). Internal to the transport.
#include "collective/transport/process/process_transport.h"

namespace ruccl {

template <typename Step, typename Missing>
void TcpTransport::drive(Step&& step, const std::vector<int>& readers, Missing&& missing,
                         const Deadline& deadline, const char* what) {
  const auto start = Deadline::Clock::now();
  // The spin and the yield restart whenever bytes move: a wait sleeps only after a quiet spell,
  // not on every frame of a long message that is still streaming in.
  auto quiet_since = start;
  std::uint64_t moved = bytes_moved();
  int last_missing = -1;  // while the trace records: the peer this wait ended on
  for (;;) {
    if (state_->failed()) throw_failure();
    try {
      progress_all();
      if (step()) {
        if (last_missing >= 0) {
          waits_.note(last_missing, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        Deadline::Clock::now() - start)
                                        .count());
        }
        return;
      }
    } catch (const CollectiveError& e) {  // a malformed piece, a lost peer: the group fails
      fail_and_throw(e);
    }
    if (waits_.observing() && !readers.empty()) last_missing = readers.back();
    const auto now = Deadline::Clock::now();
    if (deadline.expired(now)) break;
    if (const std::uint64_t m = bytes_moved(); m != moved) {
      moved = m;
      quiet_since = now;
    }
    switch (wait_.phase(now - quiet_since)) {
      case WaitPhase::Spin:
        continue;
      case WaitPhase::Yield:
        sched_yield();
        continue;
      case WaitPhase::Sleep:
        sleep(readers, deadline);
        continue;
    }
  }
  const std::vector<int> absent = missing();
  fail_and_throw(CollectiveError(
      CollectiveErrorKind::Timeout,
      str(deadline.call_name(), ": ", options_.names.name(rank_), " timed out after ",
          deadline.timeout().count(), " ms waiting for ", what, " from ",
          options_.names.list(absent), " that never arrived", calls_reached(deadline, absent)),
      absent));
}

}  // namespace ruccl
