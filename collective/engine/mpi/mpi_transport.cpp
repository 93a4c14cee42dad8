#include "collective/engine/mpi/mpi_transport.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "collective/engine/mpi/mpi_runtime.h"
#include "collective/transport/call_record_codec.h"

namespace ruccl {

namespace {

constexpr int kRecordTag = 0;
constexpr int kGoodbyeTag = 1;
constexpr int kNoticeTag = 0;

std::chrono::nanoseconds spin_time(const MpiTransportOptions& options, int world) {
  if (options.spin.count() > 0) return options.spin;
  int local = world;
  if (const char* text = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::atoi(text);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::max(1, local)) > cores
             ? std::chrono::nanoseconds(std::chrono::microseconds(2))
             : std::chrono::nanoseconds(std::chrono::microseconds(50));
}

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

std::unique_ptr<MpiTransport> MpiTransport::create(MPI_Comm comm, MpiTransportOptions options,
                                                   const Deadline& deadline) {
  mpi::ensure_initialized();
  int rank = 0;
  int world = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", CollectiveErrorKind::InvalidConfig);
  mpi::check(MPI_Comm_size(comm, &world), "MPI_Comm_size", CollectiveErrorKind::InvalidConfig);
  // Non-blocking duplicates: a rank that never comes is a Timeout, not a hang in MPI_Comm_dup.
  MPI_Comm dups[3] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
  MPI_Request requests[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  for (int i = 0; i < 3; ++i) {
    mpi::check(MPI_Comm_idup(comm, &dups[i], &requests[i]), "MPI_Comm_idup",
               CollectiveErrorKind::InvalidConfig);
  }
  for (;;) {
    int done = 0;
    mpi::check(MPI_Testall(3, requests, &done, MPI_STATUSES_IGNORE), "MPI_Comm_idup");
    if (done) break;
    if (deadline.expired()) {
      for (int i = 0; i < 3; ++i) mpi::orphan_request(requests[i], nullptr);
      throw CollectiveError(
          CollectiveErrorKind::Timeout,
          str(deadline.label(), ": rank ", rank, " timed out after ", deadline.timeout().count(),
              " ms duplicating the MPI communicator (every one of its ", world,
              " ranks must make the group)"));
    }
    sched_yield();
  }
  for (MPI_Comm c : dups) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return std::unique_ptr<MpiTransport>(
      new MpiTransport(rank, world, dups[0], dups[1], dups[2], std::move(options)));
}

MpiTransport::MpiTransport(int rank, int world, MPI_Comm data, MPI_Comm notices, MPI_Comm coll,
                           MpiTransportOptions options)
    : rank_(rank),
      world_(world),
      data_(data),
      notices_(notices),
      coll_(coll),
      options_(std::move(options)),
      spin_(spin_time(options_, world)),
      tag_span_(mpi::tag_upper_bound() - 1),
      notice_buffer_(std::make_shared<std::vector<std::uint8_t>>(mpi::kMaxNoticeBytes)),
      record_bytes_(std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(world) *
                                                                kMaxEncodedCallRecordBytes)),
      staging_(kPieceBytes),
      gathered_(static_cast<std::size_t>(world)) {
  MPI_Irecv(notice_buffer_->data(), static_cast<int>(notice_buffer_->size()), MPI_BYTE,
            MPI_ANY_SOURCE, kNoticeTag, notices_, &notice_recv_);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // the end of the program came first: nothing left to free
  if (!failed()) {
    // The leaving notice: behind every message this rank sent, so a peer still waiting for one
    // of them gets it first, and a peer waiting for more gets PeerLost at once.
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      MPI_Request r = MPI_REQUEST_NULL;
      MPI_Isend(nullptr, 0, MPI_BYTE, p, kGoodbyeTag, data_, &r);
      mpi::orphan_request(r, nullptr);  // 0 bytes: complete, or kept until they are
    }
  }
  reap_sends();
  for (PendingSend& s : sends_) mpi::orphan_request(s.request, s.buffer);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (PendingSend& s : notice_sends_) mpi::orphan_request(s.request, s.buffer);
  }
  if (notice_recv_ != MPI_REQUEST_NULL) {
    std::lock_guard<std::mutex> lock(notice_mutex_);
    MPI_Cancel(&notice_recv_);
    mpi::orphan_request(notice_recv_, notice_buffer_);
  }
  mpi::reap_orphans();
  // The duplicates are never freed: a peer's goodbye or failure notice may still be on its way
  // (or unmatched) on them, and OpenMPI gives a freed communicator's context id to the next
  // duplicate, where that message would land in a new group. Three communicators per group,
  // released by MPI_Finalize.
}

int MpiTransport::mpi_tag(std::uint64_t tag) const {
  return 2 + static_cast<int>(tag % static_cast<std::uint64_t>(tag_span_));
}

std::string MpiTransport::call_name(const Deadline& deadline) const {
  return deadline.seq() > 0 ? str(deadline.label(), " (call #", deadline.seq(), ")")
                            : std::string(deadline.label());
}

CollectiveError MpiTransport::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  RUCCL_ASSERT(error_.has_value());
  return *error_;
}

bool MpiTransport::failed() const noexcept {
  if (failed_.load(std::memory_order_acquire)) return true;
  poll_notice();
  return failed_.load(std::memory_order_acquire);
}

void MpiTransport::set_failure(const CollectiveError& error, bool tell_peers) const noexcept {
  std::shared_ptr<std::vector<std::uint8_t>> notice;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) return;  // the first failure wins
    try {
      error_ = error;
      if (tell_peers) {
        notice = std::make_shared<std::vector<std::uint8_t>>(mpi::encode_notice(error));
      }
    } catch (...) {
      error_ = CollectiveError(CollectiveErrorKind::Aborted, "out of memory failing the group");
    }
    failed_.store(true, std::memory_order_release);
    if (!notice) return;
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      MPI_Request r = MPI_REQUEST_NULL;
      if (MPI_Isend(notice->data(), static_cast<int>(notice->size()), MPI_BYTE, p, kNoticeTag,
                    notices_, &r) == MPI_SUCCESS) {
        try {
          notice_sends_.push_back(PendingSend{r, notice});
        } catch (...) {
          mpi::orphan_request(r, notice);
        }
      }
    }
  }
}

void MpiTransport::fail(const CollectiveError& error) noexcept { set_failure(error, true); }

void MpiTransport::poll_notice() const noexcept {
  std::unique_lock<std::mutex> lock(notice_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || notice_recv_ == MPI_REQUEST_NULL) return;
  int done = 0;
  MPI_Status status;
  const int code = MPI_Test(&notice_recv_, &done, &status);
  if (!done && code == MPI_SUCCESS) return;
  notice_recv_ = MPI_REQUEST_NULL;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  // A peer's failure is the group's: kept as it is, not sent on (that peer told everyone).
  set_failure(code != MPI_SUCCESS
                  ? CollectiveError(CollectiveErrorKind::PeerLost,
                                    str("the failure notice from rank ", status.MPI_SOURCE,
                                        " could not be received: ", mpi::error_string(code)),
                                    {status.MPI_SOURCE})
                  : mpi::decode_notice(notice_buffer_->data(), static_cast<std::size_t>(count),
                                       status.MPI_SOURCE),
              false);
}

void MpiTransport::withdraw_sends() noexcept {
  // Every send reads a copy of ours: hand the unfinished ones to MPI for good.
  reap_sends();
  for (PendingSend& s : sends_) mpi::orphan_request(s.request, s.buffer);
  sends_.clear();
}

void MpiTransport::throw_failure() {
  withdraw_sends();
  throw failure();
}

void MpiTransport::fail_and_throw(const CollectiveError& error) {
  fail(error);
  throw_failure();
}

void MpiTransport::fail_from_current_exception(const Deadline& deadline) noexcept {
  fail(current_exception_as_collective_error(
      str(call_name(deadline), ": ", options_.names.name(rank_)), rank_));
  withdraw_sends();
}

void MpiTransport::reap_sends() noexcept {
  std::erase_if(sends_, [&](PendingSend& s) {
    int done = 0;
    MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    if (done && s.buffer.use_count() == 1 && pool_.size() < 8) pool_.push_back(s.buffer);
    return done != 0;
  });
}

std::shared_ptr<std::vector<std::uint8_t>> MpiTransport::send_buffer(std::size_t nbytes) {
  for (std::size_t i = 0; i < pool_.size(); ++i) {
    if (pool_[i]->capacity() >= nbytes) {
      auto b = std::move(pool_[i]);
      pool_.erase(pool_.begin() + static_cast<std::ptrdiff_t>(i));
      b->resize(nbytes);
      return b;
    }
  }
  return std::make_shared<std::vector<std::uint8_t>>(nbytes);
}

template <typename Step, typename Missing>
void MpiTransport::drive(Step&& step, Missing&& missing, const Deadline& deadline,
                         const char* what) {
  const auto start = Deadline::Clock::now();
  for (;;) {
    poll_notice();
    if (failed()) throw_failure();
    try {
      if (step()) return;
    } catch (const CollectiveError& e) {  // a message that cannot match, an MPI error
      fail_and_throw(e);
    }
    const auto now = Deadline::Clock::now();
    if (deadline.expired(now)) break;
    if (now - start >= spin_) sched_yield();
  }
  const std::vector<int> absent = missing();
  const std::string waited =
      absent.empty()
          ? str(what, " to complete (every rank agreed to run it: a peer is slow or stopped)")
          : str(what, " from ", options_.names.list(absent), " that never arrived");
  fail_and_throw(CollectiveError(
      CollectiveErrorKind::Timeout,
      str(call_name(deadline), ": ", options_.names.name(rank_), " timed out after ",
          deadline.timeout().count(), " ms waiting for ", waited),
      absent));
}

void MpiTransport::start_agree(const CallRecord& mine, const Deadline&) {
  poll_notice();
  if (failed()) throw_failure();
  reap_sends();
  std::vector<std::uint8_t> encoded;
  encode_call_record(mine, encoded);
  auto buffer = send_buffer(encoded.size());
  std::memcpy(buffer->data(), encoded.data(), encoded.size());
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    MPI_Request r = MPI_REQUEST_NULL;
    const int code = MPI_Isend(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, p,
                               kRecordTag, data_, &r);
    if (code != MPI_SUCCESS) {
      fail_and_throw(CollectiveError(
          CollectiveErrorKind::PeerLost,
          str(options_.names.name(rank_), " could not send its record to ", options_.names.name(p),
              ": MPI_Isend failed: ", mpi::error_string(code)),
          {p}));
    }
    sends_.push_back(PendingSend{r, buffer});
  }
}

void MpiTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_);
  std::vector<MPI_Request> requests(static_cast<std::size_t>(world_), MPI_REQUEST_NULL);
  std::vector<MPI_Status> statuses(static_cast<std::size_t>(world_));
  std::vector<int> codes(static_cast<std::size_t>(world_), MPI_SUCCESS);
  std::uint8_t* slots = record_bytes_->data();
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    MPI_Irecv(slots + static_cast<std::size_t>(p) * kMaxEncodedCallRecordBytes,
              static_cast<int>(kMaxEncodedCallRecordBytes), MPI_BYTE, p, MPI_ANY_TAG, data_,
              &requests[static_cast<std::size_t>(p)]);
  }
  auto step = [&] {
    bool all_done = true;
    for (int p = 0; p < world_; ++p) {
      MPI_Request& r = requests[static_cast<std::size_t>(p)];
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      codes[static_cast<std::size_t>(p)] =
          MPI_Test(&r, &done, &statuses[static_cast<std::size_t>(p)]);
      if (!done && codes[static_cast<std::size_t>(p)] == MPI_SUCCESS) {
        all_done = false;
        continue;
      }
      r = MPI_REQUEST_NULL;
      const MPI_Status& s = statuses[static_cast<std::size_t>(p)];
      const int code = codes[static_cast<std::size_t>(p)];
      if (code == MPI_SUCCESS && s.MPI_TAG == kRecordTag) continue;
      if (code == MPI_SUCCESS && s.MPI_TAG == kGoodbyeTag) {
        throw CollectiveError(CollectiveErrorKind::PeerLost,
                              str(options_.names.name(rank_), " lost ", options_.names.name(p),
                                  ": it left the group (its communicator was destroyed)"),
                              {p});
      }
      // A message of a send or collective where the record of a collective was expected.
      throw CollectiveError(
          CollectiveErrorKind::CollectiveKindMismatch,
          str(options_.names.name(rank_), " expected the agreement record of a collective from ",
              options_.names.name(p), ", got a message of a send or collective",
              code != MPI_SUCCESS ? str(" (", mpi::error_string(code), ")") : std::string(),
              ": the calls can never match"),
          {std::min(rank_, p), std::max(rank_, p)});
    }
    return all_done;
  };
  auto missing = [&] {
    std::vector<int> absent;
    for (int p = 0; p < world_; ++p) {
      if (requests[static_cast<std::size_t>(p)] != MPI_REQUEST_NULL) absent.push_back(p);
    }
    return absent;
  };
  try {
    drive(step, missing, deadline, "the call");
  } catch (...) {
    // Records land in the transport's own buffer: whatever MPI cannot cancel keeps it alive.
    for (MPI_Request& r : requests) {
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
      mpi::orphan_request(r, record_bytes_);
    }
    throw;
  }
  all[static_cast<std::size_t>(rank_)] = mine;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    int count = 0;
    MPI_Get_count(&statuses[static_cast<std::size_t>(p)], MPI_BYTE, &count);
    CallRecord& record = all[static_cast<std::size_t>(p)];
    const std::string why =
        decode_call_record(std::span<const std::uint8_t>(
                               slots + static_cast<std::size_t>(p) * kMaxEncodedCallRecordBytes,
                               static_cast<std::size_t>(count)),
                           record);
    if (!why.empty() || record.seq != mine.seq) {
      fail_and_throw(CollectiveError(
          CollectiveErrorKind::PeerLost,
          str(options_.names.name(rank_), " got a malformed agreement record from ",
              options_.names.name(p), ": ",
              why.empty()
                  ? str("the record of call #", record.seq, " (expected call #", mine.seq, ")")
                  : why),
          {p}));
    }
  }
}

void MpiTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                         const Deadline&) {
  poll_notice();
  if (failed()) throw_failure();
  reap_sends();
  RUCCL_ASSERT(nbytes <= static_cast<std::size_t>(std::numeric_limits<int>::max()));
  auto buffer = send_buffer(nbytes);
  if (nbytes != 0) std::memcpy(buffer->data(), data, nbytes);
  MPI_Request r = MPI_REQUEST_NULL;
  const int code =
      MPI_Isend(buffer->data(), static_cast<int>(nbytes), MPI_BYTE, peer, mpi_tag(tag), data_, &r);
  if (code != MPI_SUCCESS) {
    fail_and_throw(CollectiveError(
        CollectiveErrorKind::PeerLost,
        str(options_.names.name(rank_), " could not send to ", options_.names.name(peer),
            ": MPI_Isend failed: ", mpi::error_string(code)),
        {peer}));
  }
  sends_.push_back(PendingSend{r, std::move(buffer)});
}

void MpiTransport::wait_send(int, const Deadline&) {
  poll_notice();
  if (failed()) throw_failure();
  reap_sends();
}

void MpiTransport::check_received(int peer, int expected_tag, std::size_t nbytes,
                                  const MPI_Status& status, int code) const {
  const auto pair = std::vector<int>{std::min(rank_, peer), std::max(rank_, peer)};
  if (code == MPI_SUCCESS && status.MPI_TAG == kGoodbyeTag) {
    throw CollectiveError(CollectiveErrorKind::PeerLost,
                          str(options_.names.name(rank_), " lost ", options_.names.name(peer),
                              ": it left the group (its communicator was destroyed)"),
                          {peer});
  }
  if (code == MPI_SUCCESS && status.MPI_TAG == kRecordTag) {
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
