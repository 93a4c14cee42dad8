#pragma once
// InProcessTransport::wait_for, the one wait loop of the in-process transport (its sends and
// agreement in in_process_transport.cpp, its receives in in_process_receive.cpp). Internal to the
// transport.
#include <chrono>
#include <string>
#include <vector>

#include "collective/transport/in_process/in_process_transport.h"

namespace ruccl {

template <typename Ready, typename Missing>
void InProcessTransport::wait_for(Ready&& ready, Missing&& missing, const Deadline& deadline,
                                  const char* what) {
  auto lost = [&](int r) {
    return hub_->rank_state(r).gone.load(std::memory_order_acquire) || hub_->link_cut(rank_, r);
  };
  auto missing_gone = [&] {
    if (!hub_->anyone_gone()) return false;  // cheap check first: nobody has left
    for (int r : missing()) {
      if (lost(r)) return true;
    }
    return false;
  };
  // A point-to-point call that can never match this wait (checked against the ranks waited for).
  const bool in_collective = p2p_peer_ < 0;
  auto deadlock = [&]() -> std::string {
    if (in_collective) {
      for (int r : missing()) {
        std::string why = p2p_deadlock(r, true);
        if (!why.empty()) return why;
      }
      return "";
    }
    return p2p_deadlock(p2p_peer_, false);
  };
  auto any_p2p = [&] {
    for (int r = 0; r < hub_->world_size(); ++r) {
      if (hub_->rank_state(r).p2p.load(std::memory_order_relaxed) != 0) return true;
    }
    return false;
  };
  // A condition that woke the wait may be gone when it is read again (a peer's point-to-point
  // state moved on, a lost rank's record arrived after all): then wait again. Timeout only when
  // the deadline really passed.
  // While the trace records: the peer still missing at the last look is the one waited for.
  const bool observing = waits_.observing();
  const auto wait_start = observing ? Deadline::Clock::now() : Deadline::Clock::time_point();
  int last_missing = -1;
  unsigned looks = 0;
  auto note_missing = [&] {
    if (!observing || (looks++ & 15) != 0) return;  // every 16th look: missing() allocates
    const std::vector<int> m = missing();
    if (!m.empty()) last_missing = m.back();
  };
  for (;;) {
    const bool done = hub_->bell().wait(
        [&] {
          if (ready()) return true;
          note_missing();
          return hub_->failed() || missing_gone() || (any_p2p() && !deadlock().empty());
        },
        deadline, hub_->policy());
    if (ready()) {
      if (observing && last_missing >= 0) {
        waits_.note(last_missing, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      Deadline::Clock::now() - wait_start)
                                      .count());
      }
      return;
    }
    if (hub_->failed()) throw_failure();
    if (const std::string why = deadlock(); !why.empty()) {
      hub_->fail(
          CollectiveError(CollectiveErrorKind::CollectiveKindMismatch,
                          str(deadline.call_name(), ": ", why, ": the calls can never match"), {}));
      throw_failure();
    }
    const std::vector<int> absent = missing();
    std::vector<int> gone;
    bool any_cut = false;
    for (int r : absent) {
      if (!lost(r)) continue;
      gone.push_back(r);
      any_cut = any_cut || !hub_->rank_state(r).gone.load(std::memory_order_acquire);
    }
    if (!gone.empty()) {
      hub_->fail(CollectiveError(
          CollectiveErrorKind::PeerLost,
          str(deadline.call_name(), ": ", hub_->names().name(rank_), " lost ",
              hub_->names().list(gone),
              any_cut ? " (the link was cut)" : " (their communicator was destroyed)",
              " while waiting for ", what),
          gone));
      throw_failure();
    }
    if (done && !deadline.expired()) continue;
    hub_->fail(CollectiveError(
        CollectiveErrorKind::Timeout,
        str(deadline.call_name(), ": ", hub_->names().name(rank_), " timed out after ",
            deadline.timeout().count(), " ms waiting for ", what, " from ",
            hub_->names().list(absent), " that never arrived", calls_reached(deadline)),
        absent));
    throw_failure();
  }
}

}  // namespace ruccl
