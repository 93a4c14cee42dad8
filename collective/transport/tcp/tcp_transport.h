#pragma once
// The TCP transport: the ranks of a group are processes (on one machine or several), connected
// in a full mesh through a rendezvous Store. Each pair of ranks has two connections: a data
// connection that carries the agreement records and the messages of the collectives, in order,
// driven by the rank's own thread without blocking (sends are written straight from the
// caller's buffer as the socket takes them, while the rank waits for anything); and a control
// connection served by a watcher thread (heartbeats, Abort, Goodbye; see tcp_control.h).
//
// Between two ranks of one host (the same kernel, network and mount namespaces, user) the
// records and messages go through a shared-memory ring instead (TcpTransportOptions::
// shared_memory, shm_channel.h, tcp_shared_memory.h): heartbeats and failures stay on TCP.
//
// A message is sent as frames of at most kPieceBytes (tcp_frame.h: magic, version, session id,
// sequence, tag, lengths, CRC-32C of header and payload). A receiver checks every header field
// before it reads the payload, reads the payload straight into the caller's buffer (recv_into)
// or into one piece-sized staging buffer (recv_with), and verifies the CRC before a consumer
// sees a byte. Anything malformed closes the connection and fails the group naming the peer.
//
// Waiting spins (retrying the non-blocking socket calls: a loopback round trip costs ~3 us that
// way, ~40 us when the process sleeps and is woken) for `spin` - counted from the last byte this
// rank moved, so a long message that keeps streaming in is never slept through frame by frame
// (2 processes, 1-64 MiB broadcast over TCP alone: 1.26-1.40x) - then sleeps in poll() on the
// sockets and the failure state's wake descriptor, each data connection's SO_RCVLOWAT set so that
// the kernel wakes it once the bytes its next step needs are there (TcpLink::arm_wakeup). With
// more ranks on this machine than cores, a wait first yields the core (sched_yield between tries)
// for `yield` before it sleeps: the rank it waits for is then usually the one the core goes to,
// where a woken sleeper costs a scheduler round trip (on a VM an inter-processor interrupt) per
// wakeup (4 KiB all_reduce over 4 processes on 2 cores: 382 -> 217 us; a large one over TCP
// alone, with the SO_RCVLOWAT mark, 1.1-1.3x faster than sleeping at once: docs/performance.md,
// session 16). The window is bounded because a yield can also hand the core to an unrelated
// process for its time slice.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/common/rank_names.h"
#include "collective/store/store.h"
#include "collective/transport/tcp/tcp_control.h"
#include "collective/transport/tcp/tcp_options.h"
#include "collective/transport/shm/tcp_shared_memory.h"
#include "collective/transport/transport.h"

namespace ruccl {


class TcpTransport final : public Transport {
 public:
  /// Rank `rank` of a `world_size`-rank group: listens, publishes its address in `store`, and
  /// connects to every peer (lower ranks are dialled, higher ones accepted; each connection
  /// starts with a Hello that must carry `session` and the expected rank). Throws
  /// CollectiveError: Timeout naming the ranks that never arrived, InvalidConfig, PeerLost.
  static std::unique_ptr<TcpTransport> connect(Store& store, int rank, int world_size,
                                               const SessionBytes& session,
                                               TcpTransportOptions options = {});
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  void start_agree(const CallRecord& mine, const Deadline& deadline) override;
  void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                    const Deadline& deadline) override;
  void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
             const Deadline& deadline) override;
  /// Returns once every message queued for `peer` is written to the socket (the buffer may be
  /// reused); the peer may not have read it yet.
  void wait_send(int peer, const Deadline& deadline) override;
  void recv_with(int peer, std::uint64_t tag, std::size_t nbytes, const ConsumeFn& consume,
                 const Deadline& deadline) override;
  void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                 const Deadline& deadline) override;
  void recv_all_with(std::span<const int> peers, std::uint64_t tag,
                     std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                     const Deadline& deadline) override;
  /// Receives from every peer at once, each straight into its buffer.
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override { control_->fail(error); }
  void withdraw_sends() noexcept override;
  bool failed() const noexcept override { return state_->failed(); }
  CollectiveError failure() const override { return state_->failure(); }

  /// Shuts the data connection to `peer` down (a cut link: the peer's next wait for this rank
  /// fails with PeerLost). For fault injection; safe from the rank's own thread only.
  void cut_link(int peer) noexcept;
  /// Shuts every connection down with no Goodbye, as if this process died (peers get PeerLost
  /// naming this rank). For fault injection (FaultHooks::kill_rank over TCP).
  void sever() noexcept;

  /// Whether messages to and from `peer` go through shared memory (TcpTransportOptions::
  /// shared_memory).
  bool shares_memory_with(int peer) const {
    return shm_.channels[static_cast<std::size_t>(peer)] != nullptr;
  }
  /// Whether every pair of the group shares memory (the same on every rank).
  bool shared_memory() const override { return shm_.everywhere; }

  /// Keeps `resource` (the store the group met in) alive as long as this transport.
  void keep_alive(std::shared_ptr<void> resource) { keep_alive_ = std::move(resource); }

  TcpTransport(int rank, int world_size, SessionBytes session, TcpTransportOptions options,
               std::vector<std::optional<TcpLink>> data,
               std::vector<std::optional<TcpLink>> control, SharedMemoryPeers shm = {});

 private:
  /// A message (or a run of its frames) being received from one peer: the frame at message
  /// offset `got` lands at dst + (got - dst_offset); done once a frame ends at or past `until`.
  struct Receive {
    int peer;
    FrameType type;
    std::uint64_t tag;
    std::size_t nbytes;  ///< Data: the message's size; Record: the buffer's, then the record's
    std::uint8_t* dst;
    std::size_t until;
    std::size_t got = 0;
    std::size_t dst_offset = 0;
    bool done = false;
  };
  /// Advances `r` as far as the socket allows (at least one frame); true when done.
  bool advance(Receive& r);
  /// Checks a frame header against the message expected from its peer.
  void check_frame(const Receive& r, const FrameHeader& h);
  /// CollectiveKindMismatch: a record (`got_record`) or a message came where `r` expected the
  /// other: a collective against a point-to-point call, which can never match.
  CollectiveError kind_mismatch(const Receive& r, bool got_record) const;
  /// CollectiveKindMismatch: a message of `tag` and `nbytes` came where `r` was expected.
  CollectiveError message_mismatch(const Receive& r, std::uint64_t tag, std::uint64_t nbytes) const;
  /// Copies what fits of the record and message being sent to shared-memory peer `peer` into
  /// its ring (waking the peer if it sleeps); true while some of them is still to copy.
  bool pump(int peer);
  /// A shared-memory peer's next piece of the record or message `r` receives, checked against
  /// it, or nullptr while there is none.
  const ShmPiece* next_piece(Receive& r);
  /// A shared-memory peer's data connection became readable, where it sends nothing: its close
  /// (PeerLost) or a frame it should not have sent (malformed). Throws either once its ring is
  /// empty (a peer that left after its last call published that call's messages first).
  void check_quiet_link(int peer);
  /// Frees the piece next_piece returned, waking the peer if it waits for a slot.
  void release_piece(Receive& r, const ShmPiece& piece);
  ShmChannel* channel(int peer) { return shm_.channels[static_cast<std::size_t>(peer)].get(); }
  /// Writes every peer's queued sends as far as the sockets allow.
  void flush_all();
  /// Drives `step` (non-blocking progress; true when done) until done: spins, then sleeps in
  /// poll() on the sockets of `readers` (which `step` may update) and of every peer with queued
  /// sends. Throws the group's
  /// failure, PeerLost, or Timeout naming missing().
  template <typename Step, typename Missing>
  void drive(Step&& step, const std::vector<int>& readers, Missing&& missing,
             const Deadline& deadline, const char* what);
  /// Bytes this rank's data connections have moved, plus pieces through shared memory (any
  /// change is progress).
  std::uint64_t bytes_moved() const;
  /// Before a sleep in poll(): raises the sleep flags of the shared-memory rings this rank waits
  /// on (those of `readers`, and those it sends into). False when one moved meanwhile.
  bool prepare_to_sleep(const std::vector<int>& readers);
  /// Receives several messages into contiguous buffers concurrently.
  void receive_all(std::span<Receive> receives, const Deadline& deadline, const char* what);
  /// Fails the group with `error` and throws it (sends withdrawn first).
  [[noreturn]] void fail_and_throw(const CollectiveError& error);
  [[noreturn]] void throw_failure();
  /// A consumer threw: fails the group with that exception, then withdraws this rank's sends.
  /// Call inside a catch block.
  void fail_from_current_exception(const Deadline& deadline) noexcept;
  /// The link's step result: throws PeerLost when the peer closed the connection.
  void check_step(int peer, LinkStep step);
  std::string call_name(const Deadline& deadline) const;
  /// The hang report ("; calls reached: ...") of a collective's timeout; "" for point-to-point.
  std::string calls_reached(const Deadline& deadline, const std::vector<int>& absent) const;
  /// Applies the wire fault for this rank's next message to `peer`, if any.
  WireFault wire_fault(int peer);
  /// Applies the wire fault for this rank's next call, if any.
  void call_fault();
  void kill_self();

  int rank_;
  int world_;
  SessionBytes session_;
  TcpTransportOptions options_;
  std::chrono::nanoseconds spin_;
  std::chrono::nanoseconds yield_;  // spin_ + the yield window (0 window: spin_)
  std::uint64_t shm_moved_ = 0;     // shared-memory pieces received and published
  std::unique_ptr<TcpFailureState> state_;
  std::vector<std::optional<TcpLink>> links_;
  std::unique_ptr<TcpControl> control_;
  SharedMemoryPeers shm_;
  std::vector<std::uint8_t> staging_;                // one piece (recv_with)
  std::vector<std::vector<std::uint8_t>> gathered_;  // per peer (recv_all_with)
  std::vector<std::uint8_t> record_bytes_;           // encoded records, by rank
  std::shared_ptr<void> keep_alive_;
  std::vector<std::uint64_t> messages_sent_;  // isends to each peer (wire_faults)
  std::vector<bool> dropping_;                // a Drop fired: every later message vanishes
  std::uint64_t calls_ = 0;                   // agree() calls (wire_faults)
  // The hang report: the newest call number each rank is known to have started (this rank's
  // own, the peers' records received), and the call whose records finish_agree waits for.
  std::vector<std::uint64_t> calls_seen_;
  std::uint64_t agreeing_seq_ = 0;
};

}  // namespace ruccl
