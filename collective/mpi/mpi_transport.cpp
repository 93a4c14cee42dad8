#include "collective/mpi/mpi_transport.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "collective/mpi/mpi_runtime.h"
#include "collective/mpi/mpi_transport_drive.h"
#include "collective/protocol/call_record_codec.h"

namespace ruccl {

namespace {

/// The wait policy (WaitPolicy::mpi) from what mpirun says: this machine's ranks
/// (OMPI_COMM_WORLD_LOCAL_SIZE, else the group's) and whether it asked ranks to yield when idle
/// (OMPI_MCA_mpi_yield_when_idle, which it sets when it oversubscribes).
WaitPolicy wait_policy(const MpiTransportOptions& options, int world) {
  int local = world;
  if (const char* text = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::atoi(text);
  const char* yield = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  return WaitPolicy::mpi(local, yield != nullptr && std::strcmp(yield, "0") != 0, options.spin);
}

/// Every rank of the new group runs the same all_reduce paths: an MPI_Iallgather of
/// pairwise_all_reduce_bytes on `comm` (a rank running MPI_Iallreduce while another runs the
/// pairwise exchange would wait for the deadline), with each rank's node (mpi::node_hash), which
/// it returns by rank. The fused limit is checked on every call.
std::vector<std::uint64_t> exchange_options(MPI_Comm comm, int rank, int world,
                                            const MpiTransportOptions& options,
                                            const Deadline& deadline) {
  const auto w = static_cast<std::size_t>(world);
  auto values = std::make_shared<std::vector<std::uint64_t>>(2 * w + 2);
  (*values)[0] = options.pairwise_all_reduce_bytes;
  (*values)[1] = mpi::node_hash();
  std::uint64_t* all = values->data() + 2;  // rank r: all[2r], all[2r + 1]
  MPI_Request request = MPI_REQUEST_NULL;
  mpi::check(MPI_Iallgather(values->data(), 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, comm, &request),
             "MPI_Iallgather", CollectiveErrorKind::InvalidConfig);
  for (;;) {
    int done = 0;
    mpi::check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Iallgather");
    if (done) break;
    if (deadline.expired()) {
      mpi::orphan_request(request, values);
      throw CollectiveError(
          CollectiveErrorKind::Timeout,
          str(deadline.label(), ": rank ", rank, " timed out after ", deadline.timeout().count(),
              " ms exchanging the MpiTransportOptions of the new group"));
    }
    sched_yield();
  }
  std::vector<int> differ;
  for (std::size_t r = 0; r < w; ++r) {
    if (all[2 * r] != all[0]) differ.push_back(static_cast<int>(r));
  }
  if (!differ.empty()) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str(deadline.label(),
                              ": expected the same MpiTransportOptions::pairwise_all_reduce_bytes "
                              "on every rank, got ",
                              all[0], " on rank 0 and ",
                              all[2 * static_cast<std::size_t>(differ[0])], " on rank ", differ[0]),
                          differ);
  }
  std::vector<std::uint64_t> nodes(w);
  for (std::size_t r = 0; r < w; ++r) nodes[r] = all[2 * r + 1];
  return nodes;
}

/// By peer: the longest message send_record_with sends it (MpiTransportOptions::
/// eager_message_bytes).
std::vector<std::size_t> piece_sizes(const MpiTransportOptions& options, int rank,
                                     const std::vector<std::uint64_t>& nodes) {
  std::vector<std::size_t> pieces(nodes.size(), options.eager_message_bytes);
  if (options.eager_message_bytes != 0) return pieces;
  const std::size_t shared = mpi::shared_memory_eager_limit();
  for (std::size_t p = 0; p < nodes.size(); ++p) {
    const bool local = nodes[p] == nodes[static_cast<std::size_t>(rank)];
    pieces[p] = local && shared > 2 * MpiTransportOptions::kEagerHeaderBytes
                    ? shared - MpiTransportOptions::kEagerHeaderBytes
                    : SIZE_MAX;
  }
  return pieces;
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
  const std::vector<std::uint64_t> nodes =
      exchange_options(dups[2], rank, world, options, deadline);
  return std::unique_ptr<MpiTransport>(
      new MpiTransport(rank, world, dups[0], dups[1], dups[2], std::move(options), nodes));
}

MpiTransport::MpiTransport(int rank, int world, MPI_Comm data, MPI_Comm notices, MPI_Comm coll,
                           MpiTransportOptions options, const std::vector<std::uint64_t>& nodes)
    : rank_(rank),
      world_(world),
      data_(data),
      notices_(notices),
      coll_(coll),
      options_(std::move(options)),
      wait_(wait_policy(options_, world)),
      tag_span_(mpi::tag_upper_bound() - (mpi_tags::kFirstData - 1)),  // tags up to the bound
      notice_buffer_(std::make_shared<std::vector<std::uint8_t>>(mpi::kMaxNoticeBytes)),
      staging_(kPieceBytes),
      gathered_(static_cast<std::size_t>(world)),
      piece_bytes_(piece_sizes(options_, rank, nodes)),
      messages_(static_cast<std::size_t>(world)),
      message_bytes_(static_cast<std::size_t>(world), 0),
      record_end_(static_cast<std::size_t>(world), 0),
      calls_seen_(static_cast<std::size_t>(world), kCallNotSeen) {
  for (auto& m : messages_) m = std::make_shared<AlignedBytes>();
  MPI_Irecv(notice_buffer_->data(), static_cast<int>(notice_buffer_->size()), MPI_BYTE,
            MPI_ANY_SOURCE, mpi_tags::kNotice, notices_, &notice_recv_);
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
      MPI_Isend(nullptr, 0, MPI_BYTE, p, mpi_tags::kGoodbye, data_, &r);
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
  // A peer's fused all_reduce may still send its record and data here (above MPI's eager limit
  // that send completes only once received): the runtime receives them from now on.
  mpi::retire_communicator(data_);
  mpi::retire_communicator(notices_);
  mpi::reap_orphans();
  // The duplicates are never freed: a peer's goodbye or failure notice may still be on its way
  // (or unmatched) on them, and OpenMPI gives a freed communicator's context id to the next
  // duplicate, where that message would land in a new group. Three communicators per group,
  // released by MPI_Finalize.
}

int MpiTransport::mpi_tag(std::uint64_t tag) const {
  return mpi_tags::kFirstData + static_cast<int>(tag % static_cast<std::uint64_t>(tag_span_));
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
  std::shared_ptr<AlignedBytes> notice;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) return;  // the first failure wins
    try {
      error_ = error;
      if (tell_peers) {
        const std::vector<std::uint8_t> encoded = mpi::encode_notice(error);
        notice = std::make_shared<AlignedBytes>(encoded.begin(), encoded.end());
      }
    } catch (...) {
      error_ = CollectiveError(CollectiveErrorKind::Aborted, "out of memory failing the group");
    }
    failed_.store(true, std::memory_order_release);
    if (!notice) return;
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      MPI_Request r = MPI_REQUEST_NULL;
      if (MPI_Isend(notice->data(), static_cast<int>(notice->size()), MPI_BYTE, p,
                    mpi_tags::kNotice, notices_, &r) == MPI_SUCCESS) {
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
      str(deadline.call_name(), ": ", options_.names.name(rank_)), rank_));
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

std::shared_ptr<AlignedBytes> MpiTransport::send_buffer(std::size_t nbytes) {
  for (std::size_t i = 0; i < pool_.size(); ++i) {
    if (pool_[i]->capacity() >= nbytes) {
      auto b = std::move(pool_[i]);
      pool_.erase(pool_.begin() + static_cast<std::ptrdiff_t>(i));
      b->resize(nbytes);
      return b;
    }
  }
  return std::make_shared<AlignedBytes>(nbytes);
}

void MpiTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                         const Deadline&) {
  poll_notice();
  if (failed()) throw_failure();
  reap_sends();
  flush_record();  // a pending agreement record goes first: it is the call's first message
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

}  // namespace ruccl
