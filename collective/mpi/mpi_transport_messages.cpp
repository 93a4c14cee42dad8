// MpiTransport: receiving (every receive takes its peer's next message whatever its tag, then
// checks it) and the engine's waits. The rest is in mpi_transport.cpp.
#include <algorithm>
#include <limits>

#include "collective/mpi/mpi_runtime.h"
#include "collective/mpi/mpi_transport.h"
#include "collective/mpi/mpi_transport_drive.h"

namespace ruccl {

namespace {

/// Cancels the receives of `requests` still pending and waits for them to complete (a cancelled
/// receive completes at once; one already matched completes when its data arrives). Returns
/// false when some did not complete within a second.
bool cancel_receives(std::span<MPI_Request> requests) noexcept {
  for (MPI_Request& r : requests) {
    if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
  }
  const auto until = Deadline::Clock::now() + std::chrono::seconds(1);
  for (;;) {
    bool all = true;
    for (MPI_Request& r : requests) {
      int done = 0;
      if (r != MPI_REQUEST_NULL) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      if (r != MPI_REQUEST_NULL) all = false;
    }
    if (all) return true;
    if (Deadline::Clock::now() >= until) return false;
    sched_yield();
  }
}

}  // namespace

void MpiTransport::check_received(int peer, int expected_tag, std::size_t nbytes,
                                  const MPI_Status& status, int code) const {
  const auto pair = std::vector<int>{std::min(rank_, peer), std::max(rank_, peer)};
  if (code == MPI_SUCCESS && status.MPI_TAG == mpi_tags::kGoodbye) {
    throw CollectiveError(CollectiveErrorKind::PeerLost,
                          str(options_.names.name(rank_), " lost ", options_.names.name(peer),
                              ": it left the group (its communicator was destroyed)"),
                          {peer});
  }
  // A record (with its data behind it: longer than expected, so truncated) where a message was.
  const bool record =
      status.MPI_TAG == mpi_tags::kRecord || status.MPI_TAG == mpi_tags::kRecordHead;
  if ((code == MPI_SUCCESS || code == MPI_ERR_TRUNCATE) && record) {
    throw CollectiveError(
        CollectiveErrorKind::CollectiveKindMismatch,
        str(options_.names.name(rank_), " expected a message of a send or collective from ",
            options_.names.name(peer),
            ", got the record of a collective: the calls can never "
            "match"),
        pair);
  }
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (code != MPI_SUCCESS || status.MPI_TAG != expected_tag ||
      static_cast<std::size_t>(count) != nbytes) {
    throw CollectiveError(
        CollectiveErrorKind::CollectiveKindMismatch,
        str(options_.names.name(rank_), " expected message tag ", expected_tag, " (", nbytes,
            " bytes) from ", options_.names.name(peer), ", got ",
            code != MPI_SUCCESS ? str("a longer message (", mpi::error_string(code), ")")
                                : str("tag ", status.MPI_TAG, " (", count, " bytes)")),
        pair);
  }
}

void MpiTransport::receive(std::span<const int> peers, std::uint64_t tag,
                           std::span<void* const> dsts, std::span<const std::size_t> sizes,
                           const std::shared_ptr<void>& keep, const Deadline& deadline) {
  poll_notice();
  if (failed()) throw_failure();
  const int expected = mpi_tag(tag);
  std::vector<MPI_Request> requests(peers.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < peers.size(); ++i) {
    RUCCL_ASSERT(sizes[i] <= static_cast<std::size_t>(std::numeric_limits<int>::max()));
    MPI_Irecv(dsts[i], static_cast<int>(sizes[i]), MPI_BYTE, peers[i], MPI_ANY_TAG, data_,
              &requests[i]);
  }
  auto step = [&] {
    bool all = true;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Status status;
      const int code = MPI_Test(&requests[i], &done, &status);
      if (!done && code == MPI_SUCCESS) {
        all = false;
        continue;
      }
      requests[i] = MPI_REQUEST_NULL;
      check_received(peers[i], expected, sizes[i], status, code);
    }
    return all;
  };
  auto missing = [&] {
    std::vector<int> absent;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (requests[i] != MPI_REQUEST_NULL) absent.push_back(peers[i]);
    }
    return absent;
  };
  try {
    drive(step, missing, deadline, "a message");
  } catch (...) {
    if (keep) {
      for (MPI_Request& r : requests) {
        if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
        mpi::orphan_request(r, keep);
      }
    } else if (!cancel_receives(requests)) {
      mpi::abort_job(str("ruccl: ", options_.names.name(rank_),
                         ": a receive into the caller's buffer could not be cancelled after the "
                         "group failed (",
                         failed() ? failure().what() : "an error",
                         "); MPI cannot survive a lost rank: ending the job with MPI_Abort"));
    }
    throw;
  }
}

void MpiTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                             const Deadline& deadline) {
  receive(std::span<const int>(&peer, 1), tag, std::span<void* const>(&dst, 1),
          std::span<const std::size_t>(&nbytes, 1), nullptr, deadline);
}

void MpiTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                 std::span<void* const> dsts, std::span<const std::size_t> sizes,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == dsts.size() && peers.size() == sizes.size());
  receive(peers, tag, dsts, sizes, nullptr, deadline);
}

void MpiTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                             const ConsumeFn& consume, const Deadline& deadline) {
  if (staging_.size() < nbytes) staging_.resize(nbytes);
  void* dst = staging_.data();
  receive(std::span<const int>(&peer, 1), tag, std::span<void* const>(&dst, 1),
          std::span<const std::size_t>(&nbytes, 1), nullptr, deadline);
  std::size_t offset = 0;
  try {
    do {
      if (failed()) throw_failure();
      const std::size_t n = std::min(kPieceBytes, nbytes - offset);
      consume(offset, staging_.data() + offset, n);
      offset += n;
    } while (offset < nbytes);
  } catch (const CollectiveError&) {
    if (failed()) throw;
    fail_from_current_exception(deadline);
    throw;
  } catch (...) {
    fail_from_current_exception(deadline);
    throw;
  }
}

void MpiTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                 std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == sizes.size());
  std::vector<void*> dsts(peers.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    auto& buffer = gathered_[static_cast<std::size_t>(peers[i])];
    if (buffer.size() < sizes[i]) buffer.resize(sizes[i]);
    dsts[i] = buffer.data();
    total = std::max(total, sizes[i]);
  }
  receive(peers, tag, dsts, sizes, nullptr, deadline);
  std::vector<const void*> data(peers.size());
  std::size_t offset = 0;
  try {
    do {
      if (failed()) throw_failure();
      const std::size_t n = std::min(kPieceBytes, total - offset);
      for (std::size_t i = 0; i < peers.size(); ++i) {
        data[i] = static_cast<const std::uint8_t*>(dsts[i]) + std::min(offset, sizes[i]);
      }
      consume(offset, data, n);
      offset += n;
    } while (offset < total);
  } catch (...) {
    if (!failed()) fail_from_current_exception(deadline);
    throw;
  }
}

void MpiTransport::wait(std::span<MPI_Request> requests, const std::shared_ptr<void>& keep,
                        const Deadline& deadline, const char* what) {
  int first_error = MPI_SUCCESS;
  auto step = [&] {
    bool all = true;
    for (MPI_Request& r : requests) {
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      const int code = MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) {
        first_error = code;
        r = MPI_REQUEST_NULL;
        throw CollectiveError(
            CollectiveErrorKind::PeerLost,
            str(options_.names.name(rank_), ": ", what, " failed: ", mpi::error_string(code)));
      }
      if (!done) all = false;
    }
    return all;
  };
  // A collective has no rank to blame: agreement made sure every rank called it.
  auto missing = [&] { return std::vector<int>{}; };
  try {
    drive(step, missing, deadline, what);
  } catch (...) {
    for (MPI_Request& r : requests) mpi::orphan_request(r, keep);
    throw;
  }
}

}  // namespace ruccl
