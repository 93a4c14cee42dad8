#pragma once
// MpiTransport: a Transport over MPI point-to-point messages, for groups whose ranks are MPI
// processes (mpirun, srun --mpi=pmix). It is the control channel of the MPI engine (agreement,
// failure notices, deadlines) and the transport of its fallback (our algorithms over MPI
// point-to-point: dtypes MPI lacks, or bit-identical results on request).
//
// It works on three duplicates of the caller's communicator, so no message of ruCCL can match
// one of the program's own:
//   - data: the agreement records (a fused all_reduce's data behind its record, in one message:
//     send_record_with) and the messages of the algorithms and of send/recv, in order per pair of
//     ranks. The agreement probes each peer's next message and receives it whole at its size
//     (MPI_Improbe, MPI_Imrecv); every other receive is posted for the next message of its peer
//     whatever its tag (MPI_ANY_TAG: MPI keeps one sender's messages in order on a communicator),
//     and then checked: our 64-bit tag (mapped to an MPI tag, whose upper bound may be 32767,
//     modulo the bound, see mpi_tag), its size, or a record where a message was expected (a
//     point-to-point call facing a collective: CollectiveKindMismatch, never a wait), or a peer's
//     goodbye (its communicator was destroyed: PeerLost);
//   - notices: a failing rank sends the encoded CollectiveError (kind, ranks, message) to every
//     other rank; every wait polls for it, so an abort or a failure wakes every rank with its
//     cause;
//   - collectives: the MPI engine's non-blocking collectives (collective_comm(), wait()).
// The duplicates live until MPI_Finalize: a late message on a freed one would reach the next
// group that is given its context id.
//
// Every wait polls MPI_Test (which drives MPI's progress engine) and the notices against its
// Deadline, as MPI_Wait does, following WaitPolicy::mpi (collective/common/wait_policy.h): without
// pause while this machine's ranks fit its cores, else yielding the core between tests after
// `spin`; never sleeping (a sleep would stall a non-blocking collective, which progresses only
// while its rank calls MPI). Expiry fails the group with Timeout naming the ranks whose messages
// never came. Sends are copied into buffers of the transport (wait_send returns at once): MPI
// cannot cancel a send, so a failed group leaves MPI the copy, never the caller's buffer. A receive
// into the caller's buffer is cancelled on failure; one MPI can no longer cancel (matched, then its
// sender lost) ends the job with MPI_Abort (mpi_runtime.h: MPI cannot survive a lost rank).
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "collective/common/aligned_bytes.h"
#include "collective/common/rank_names.h"
#include "collective/common/wait_policy.h"
#include "collective/protocol/hang_report.h"
#include "collective/transport/transport.h"

namespace ruccl {

struct MpiTransportOptions {
  /// How long a wait polls MPI before it starts yielding the core between tests. 0: the
  /// default (WaitPolicy::mpi): never yield while the ranks on this machine
  /// (OMPI_COMM_WORLD_LOCAL_SIZE, else the communicator's size) fit its cores and
  /// mpi_yield_when_idle is not set (OMPI_MCA_mpi_yield_when_idle), else yield after 2 us.
  std::chrono::nanoseconds spin{0};
  /// The MPI engine runs an all_reduce of at most this many bytes (in its accumulation dtype) as
  /// one exchange: every rank's record with its data behind it to every peer, then every rank
  /// folds all inputs in the canonical order (bit-identical on every rank). Larger ones run on
  /// the pairwise exchange or MPI_Iallreduce after the agreement exchange. 0: never. Must be the
  /// same on every rank: where one rank fuses and another does not, the call fails with PeerLost
  /// (an F16/BF16 call whose peers run the fallback times out instead). The default is the
  /// measured crossover (docs/performance-history.md, "## MPI engine: three all_reduce paths").
  std::size_t fused_all_reduce_bytes = kDefaultFusedAllReduceBytes;
  static constexpr std::size_t kDefaultFusedAllReduceBytes = std::size_t{32} << 10;
  /// In a group of at most kPairwiseMaxWorld ranks, a larger all_reduce of F32/F64/I32/I64 of
  /// at least this many bytes runs our pairwise reduce-scatter and all-gather on MPI
  /// point-to-point messages straight from and into the tensors (canonical order: bit-identical
  /// on every rank) instead of MPI_Iallreduce. 0 (the default): every all_reduce above the fused
  /// limit; SIZE_MAX: never (MPI's own collective at every size, e.g. for a fabric whose MPI
  /// offloads collectives). Must be the same on every rank: MpiTransport::create checks it
  /// (InvalidConfig).
  std::size_t pairwise_all_reduce_bytes = 0;
  static constexpr int kPairwiseMaxWorld = 4;
  /// A record with data behind it longer than a peer's piece size goes to that peer in pieces
  /// of at most that many bytes, one message each, so that every piece stays within MPI's eager
  /// protocol (a message above the eager limit waits for its receiver, a rendezvous, several times
  /// slower: docs/performance-history.md, "## MPI engine: eager pieces").
  /// 0 (the default): for a peer on this node (the same MPI_Get_processor_name), the
  /// shared-memory eager limit MPI reports (mpi::shared_memory_eager_limit: OpenMPI's
  /// btl_vader_eager_limit, 4 KiB unless set) less kEagerHeaderBytes; for a peer on another node,
  /// or when MPI reports no limit, one message (OpenMPI's TCP eager limit, 64 KiB, is above
  /// fused_all_reduce_bytes, and pieces over TCP are slower). Otherwise pieces of this many bytes
  /// to every peer (SIZE_MAX: one message always). Ranks may differ: each receiver reassembles
  /// what each sender sent.
  std::size_t eager_message_bytes = 0;
  /// What OpenMPI's headers take of a shared-memory eager message (4040 B of data still went
  /// eager with the 4 KiB limit, 4048 B did not).
  static constexpr std::size_t kEagerHeaderBytes = 64;
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
  TransportTraits traits() const override { return TransportTraits{}; }
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

  /// Groups are MPI's own: MPI_Comm_split of this group's collective communicator, then a new
  /// MpiTransport over the result (its own duplicates, notices and failure). Every rank calls it
  /// right after the split's colors were agreed, so MPI_Comm_split (blocking) meets every rank.
  bool splits_natively() const override { return true; }
  std::unique_ptr<Transport> split_natively(int color, int key, const Deadline& deadline) override;

  /// The communicator the MPI engine runs its collectives on (this group's own duplicate).
  MPI_Comm collective_comm() const { return coll_; }
  /// Waits until every request of `requests` completed, polling the failure notices against the
  /// deadline. On any failure (Timeout, a notice, an MPI error) it fails the group, hands the
  /// requests still pending to mpi::orphan_request with `keep` (the buffers they use), and
  /// throws. `what` names the operation in a timeout ("MPI_Iallreduce").
  void wait(std::span<MPI_Request> requests, const std::shared_ptr<void>& keep,
            const Deadline& deadline, const char* what);
  const MpiTransportOptions& options() const { return options_; }
  /// The MPI tag a message with our 64-bit `tag` carries on the data communicator.
  int mpi_tag(std::uint64_t tag) const;

  /// Between start_agree and finish_agree, instead of any isend: sends this rank's record with
  /// `nbytes` at `data` behind it, one message per peer, or pieces where together they are longer
  /// than the peer's piece size (eager_message_bytes; the MPI engine's small all_reduce: one
  /// exchange). Copies `data`; returns at once.
  void send_record_with(const void* data, std::size_t nbytes);
  /// After finish_agree: the bytes peer `peer` sent behind its record of this call (empty when it
  /// sent none, and for this rank). Valid until the next start_agree.
  std::span<const std::uint8_t> agreed_payload(int peer) const;
  /// After finish_agree (and the agreement check): throws PeerLost naming the first peer whose
  /// payload was not `nbytes` bytes long, failing the group (agreed records mean every rank sent
  /// the same form: anything else is a malformed message).
  void expect_payloads(std::size_t nbytes);

 private:
  MpiTransport(int rank, int world, MPI_Comm data, MPI_Comm notices, MPI_Comm coll,
               MpiTransportOptions options, const std::vector<std::uint64_t>& nodes);

  struct PendingSend {
    MPI_Request request;
    std::shared_ptr<AlignedBytes> buffer;
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
  std::shared_ptr<AlignedBytes> send_buffer(std::size_t nbytes);
  /// Sends the record start_agree encoded, unless it went already (with data or alone).
  void flush_record();
  /// "; calls reached: ..." (the hang report) for a Timeout of a collective; "" for send/recv.
  std::string calls_reached(const Deadline& deadline, const std::vector<int>& absent) const;
  /// Decodes peer p's message of this call (record, then payload) into `record`: "" or why not.
  std::string decode_message(int p, CallRecord& record);

  int rank_;
  int world_;
  MPI_Comm data_;
  MPI_Comm notices_;
  MPI_Comm coll_;
  MpiTransportOptions options_;
  WaitPolicy wait_;  // spin, then yield between tests; never sleep
  int tag_span_;     // data tags are kFirstData + tag % tag_span_ (below: records, goodbyes)

  // mutable: failed() takes a notice that arrived. fail() and failed() run on any thread.
  mutable std::mutex mutex_;  // guards error_ and notice_sends_
  mutable std::atomic<bool> failed_{false};
  mutable std::optional<CollectiveError> error_;
  mutable std::vector<PendingSend> notice_sends_;

  mutable std::mutex notice_mutex_;                     // one thread tests notice_recv_ at a time
  mutable MPI_Request notice_recv_ = MPI_REQUEST_NULL;  // the posted receive of a peer's notice
  std::shared_ptr<std::vector<std::uint8_t>> notice_buffer_;
  std::vector<PendingSend> sends_;                   // data and records in flight
  std::vector<std::shared_ptr<AlignedBytes>> pool_;  // send buffers to reuse
  AlignedBytes staging_;                             // recv_with
  std::vector<AlignedBytes> gathered_;               // recv_all_with, by peer
  std::vector<std::uint8_t> encoded_;                // this rank's record
  std::vector<std::size_t> piece_bytes_;  // by peer: the longest message of send_record_with
  bool record_pending_ = false;           // start_agree encoded it; not sent yet
  // finish_agree, by rank: each peer's message of the call (its record, then any payload),
  // received at its probed size; shared: a receive MPI cannot cancel keeps its buffer.
  std::vector<std::shared_ptr<AlignedBytes>> messages_;
  std::vector<std::size_t> message_bytes_;
  std::vector<std::size_t> record_end_;  // where the payload begins (16-byte aligned)
  std::vector<MPI_Request> agree_requests_;
  std::vector<std::uint8_t> agree_states_;
  // The hang report: the newest call number each rank is known to have started (its record
  // came), and the call whose records finish_agree waits for (0: none).
  std::vector<std::uint64_t> calls_seen_;
  std::uint64_t agreeing_seq_ = 0;
};

}  // namespace ruccl
