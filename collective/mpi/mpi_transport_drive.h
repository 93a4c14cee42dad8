#pragma once
// MpiTransport::drive, the one wait loop of the transport (mpi_transport.cpp and
// mpi_transport_messages.cpp use it) and the MPI tags of the data and notice communicators.
// Internal to the transport: not part of ruCCL's API.
#include <sched.h>

#include "collective/mpi/mpi_transport.h"

namespace ruccl {

namespace mpi_tags {
inline constexpr int kRecord = 0;   ///< data communicator: an agreement record (+ its data)
inline constexpr int kGoodbye = 1;  ///< data communicator: the peer destroyed its communicator
// A record with its data sent in pieces (MpiTransportOptions::eager_message_bytes): the first
// piece, then the sender's next messages, up to the last.
inline constexpr int kRecordHead = 2;  ///< data communicator: the first piece
inline constexpr int kRecordMore = 3;  ///< data communicator: a piece between the first and last
inline constexpr int kRecordLast = 4;  ///< data communicator: the last piece
inline constexpr int kFirstData = 5;   ///< data communicator: the first tag of mpi_tag
inline constexpr int kNotice = 0;      ///< notice communicator: a failure notice
}  // namespace mpi_tags

template <typename Step, typename Missing>
void MpiTransport::drive(Step&& step, Missing&& missing, const Deadline& deadline,
                         const char* what) {
  const auto start = Deadline::Clock::now();
  for (;;) {
    poll_notice();
    if (failed_.load(std::memory_order_acquire)) throw_failure();
    try {
      if (step()) return;
    } catch (const CollectiveError& e) {  // a message that cannot match, an MPI error
      fail_and_throw(e);
    }
    const auto now = Deadline::Clock::now();
    if (deadline.expired(now)) break;
    if (wait_.phase(now - start) == WaitPhase::Yield) sched_yield();
  }
  const std::vector<int> absent = missing();
  const std::string waited =
      absent.empty()
          ? str(what, " to complete (every rank agreed to run it: a peer is slow or stopped)")
          : str(what, " from ", options_.names.list(absent), " that never arrived");
  fail_and_throw(CollectiveError(
      CollectiveErrorKind::Timeout,
      str(deadline.call_name(), ": ", options_.names.name(rank_), " timed out after ",
          deadline.timeout().count(), " ms waiting for ", waited, calls_reached(deadline, absent)),
      absent));
}

}  // namespace ruccl
