#pragma once
// MpiTransport: a Transport over MPI point-to-point messages, for groups whose ranks are MPI
// processes (mpirun, srun --mpi=pmix). It is the control channel of the MPI engine (agreement,
// failure notices, deadlines) and the transport of its fallback (our algorithms over MPI
// point-to-point: dtypes MPI lacks, or bit-identical results on request).
//
// It works on three duplicates of the caller's communicator, so no message of ruCCL can match
// one of the program's own:
//   - data: the agreement records and the messages of the algorithms and of send/recv, in order
//     per pair of ranks. Every receive is posted for the next message of its peer whatever its
//     tag (MPI_ANY_TAG: MPI keeps one sender's messages in order on a communicator), and then
//     checked: our 64-bit tag (mapped to an MPI tag, whose upper bound may be 32767, modulo the
//     bound, see mpi_tag), its size, or a record where a message was expected (a point-to-point
//     call facing a collective: CollectiveKindMismatch, never a wait), or a peer's goodbye (its
//     communicator was destroyed: PeerLost);
//   - notices: a failing rank sends the encoded CollectiveError (kind, ranks, message) to every
//     other rank; every wait polls for it, so an abort or a failure wakes every rank with its
//     cause;
//   - collectives: the MPI engine's non-blocking collectives (collective_comm(), wait()).
// The duplicates live until MPI_Finalize: a late message on a freed one would reach the next
// group that is given its context id.
//
// Every wait polls MPI_Test (which drives MPI's progress engine) and the notices against its
// Deadline, spinning for `spin`, then yielding the core between tests (as MPI_Wait does with
// mpi_yield_when_idle); expiry fails the group with Timeout naming the ranks whose messages never
// came. Sends are copied into buffers of the transport (wait_send returns at once): MPI cannot
// cancel a send, so a failed group leaves MPI the copy, never the caller's buffer. A receive into
// the caller's buffer is cancelled on failure; one MPI can no longer cancel (matched, then its
// sender lost) ends the job with MPI_Abort (mpi_runtime.h: MPI cannot survive a lost rank).
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "collective/rank_names.h"
#include "collective/transport/transport.h"

namespace ruccl {

struct MpiTransportOptions {
  /// How long a wait polls MPI without yielding the core. 0: the default, 50 us when the ranks on
  /// this machine (OMPI_COMM_WORLD_LOCAL_SIZE, else the communicator's size) fit its cores, else
  /// 2 us.
  std::chrono::nanoseconds spin{0};
  /// How error messages name the ranks.
  RankNames names;
};

class MpiTransport final : public Transport {
 public:
  /// This process's rank of a group over `comm` (every rank of `comm` must call it: it
  /// duplicates `comm` three times, non-blocking, within `deadline`). `comm` may be freed
  /// afterwards. Initialises MPI when the program has not (mpi::ensure_initialized). Throws
  /// CollectiveError: InvalidConfig (MPI thread level), Timeout.
  static std::unique_ptr<MpiTransport> create(MPI_Comm comm, MpiTransportOptions options,
                                              const Deadline& deadline);
  ~MpiTransport() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  void start_agree(const CallRecord& mine, const Deadline& deadline) override;
  void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                    const Deadline& deadline) override;
  /// Copies the message and posts its MPI_Isend: returns at once.
  void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
             const Deadline& deadline) override;
  /// Returns at once: isend copied the buffer.
  void wait_send(int peer, const Deadline& deadline) override;
  void recv_with(int peer, std::uint64_t tag, std::size_t nbytes, const ConsumeFn& consume,
                 const Deadline& deadline) override;
  void recv_all_with(std::span<const int> peers, std::uint64_t tag,
                     std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                     const Deadline& deadline) override;
  void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                 const Deadline& deadline) override;
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override;
  void withdraw_sends() noexcept override;
  /// Also takes a peer's failure notice that arrived since the last wait.
  bool failed() const noexcept override;
  CollectiveError failure() const override;

  /// The communicator the MPI engine runs its collectives on (this group's own duplicate).
  MPI_Comm collective_comm() const { return coll_; }
  /// Waits until every request of `requests` completed, polling the failure notices against the
  /// deadline. On any failure (Timeout, a notice, an MPI error) it fails the group, hands the
  /// requests still pending to mpi::orphan_request with `keep` (the buffers they use), and
  /// throws. `what` names the operation in a timeout ("MPI_Iallreduce").
  void wait(std::span<MPI_Request> requests, const std::shared_ptr<void>& keep,
            const Deadline& deadline, const char* what);
  /// The MPI tag a message with our 64-bit `tag` carries on the data communicator.
  int mpi_tag(std::uint64_t tag) const;

 private:
  MpiTransport(int rank, int world, MPI_Comm data, MPI_Comm notices, MPI_Comm coll,
               MpiTransportOptions options);

  struct PendingSend {
    MPI_Request request;
    std::shared_ptr<std::vector<std::uint8_t>> buffer;
  };
  /// Polls `step` (true when done), the notices and the deadline; throws the group's failure
  /// (sends withdrawn) or, at the deadline, fails the group with Timeout naming missing().
  template <typename Step, typename Missing>
  void drive(Step&& step, Missing&& missing, const Deadline& deadline, const char* what);
  /// Receives the next message of each peers[i] into dsts[i] (sizes[i] bytes, `tag`); on any
  /// failure cancels the receives still pending (`keep` null: the caller's buffers, which must
  /// not outlive a receive MPI could still complete).
  void receive(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
               std::span<const std::size_t> sizes, const std::shared_ptr<void>& keep,
               const Deadline& deadline);
  /// Checks a completed data receive against what was expected (throws CollectiveError).
  void check_received(int peer, int expected_tag, std::size_t nbytes, const MPI_Status& status,
                      int code) const;
  /// Takes a peer's failure notice if one arrived (any thread: one polls at a time).
  void poll_notice() const noexcept;
  void set_failure(const CollectiveError& error, bool tell_peers) const noexcept;
  [[noreturn]] void throw_failure();
  [[noreturn]] void fail_and_throw(const CollectiveError& error);
  void fail_from_current_exception(const Deadline& deadline) noexcept;
  void reap_sends() noexcept;
  std::shared_ptr<std::vector<std::uint8_t>> send_buffer(std::size_t nbytes);
  std::string call_name(const Deadline& deadline) const;

  int rank_;
  int world_;
  MPI_Comm data_;
  MPI_Comm notices_;
  MPI_Comm coll_;
  MpiTransportOptions options_;
  std::chrono::nanoseconds spin_;
  int tag_span_;  // data tags are 2 + tag % tag_span_ (0: records, 1: goodbyes)

  // mutable: failed() takes a notice that arrived. fail() and failed() run on any thread.
  mutable std::mutex mutex_;  // guards error_ and notice_sends_
  mutable std::atomic<bool> failed_{false};
  mutable std::optional<CollectiveError> error_;
  mutable std::vector<PendingSend> notice_sends_;

  mutable std::mutex notice_mutex_;                     // one thread tests notice_recv_ at a time
  mutable MPI_Request notice_recv_ = MPI_REQUEST_NULL;  // the posted receive of a peer's notice
  std::shared_ptr<std::vector<std::uint8_t>> notice_buffer_;
  std::vector<PendingSend> sends_;                                // data and records in flight
  std::vector<std::shared_ptr<std::vector<std::uint8_t>>> pool_;  // send buffers to reuse
  std::shared_ptr<std::vector<std::uint8_t>> record_bytes_;       // peers' records, by rank
  std::vector<std::uint8_t> staging_;                             // recv_with
  std::vector<std::vector<std::uint8_t>> gathered_;               // recv_all_with, by peer
};

}  // namespace ruccl
