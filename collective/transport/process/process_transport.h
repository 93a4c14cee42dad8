#pragma once
// The process transport (TcpTransport): the ranks of a group are processes, on one machine or
// several, connected in a full mesh through a rendezvous Store (tcp/tcp_mesh.h). Each pair of
// ranks has a control connection served by a watcher thread (heartbeats, Abort, Goodbye:
// tcp/tcp_control.h) and a data connection; how a pair's records and messages travel is its peer
// path (transport/peer_path.h), chosen per peer at connect, the best that reaches it first
// (process_connect.cpp): a shared-memory ring between ranks of one host (shm/shm_path.h), else
// frames on the data connection (tcp/tcp_path.h).
//
// This transport keeps what every path shares: the mesh, the control channel, the agreement, the
// failure paths, and the progress loop (drive) that the rank's own thread runs while it waits.
// Sends are posted to their path and progressed while the rank waits for anything; receives are
// advanced path by path; the loop spins, then yields, then sleeps in poll() on what the paths arm
// (WaitPolicy::process, counted from the last byte moved, so a long message that keeps streaming
// in is never slept through frame by frame). Anything malformed fails the group naming the peer.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/common/rank_names.h"
#include "collective/common/wait_policy.h"
#include "collective/store/store.h"
#include "collective/transport/peer_path.h"
#include "collective/transport/tcp/tcp_control.h"
#include "collective/transport/tcp/tcp_options.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// Makes the path to `peer` over `link` (the pair's data connection, owned by the transport);
/// `names` are the transport's (both outlive the path).
using PeerPathSelector =
    std::function<std::unique_ptr<PeerPath>(int peer, TcpLink& link, const RankNames& names)>;

class TcpTransport final : public Transport {
 public:
  /// Rank `rank` of a `world_size`-rank group: listens, publishes its address in `store`, and
  /// connects to every peer (lower ranks are dialled, higher ones accepted; each connection
  /// starts with a Hello that must carry `session` and the expected rank), then chooses each
  /// peer's path. Throws CollectiveError: Timeout naming the ranks that never arrived,
  /// InvalidConfig, PeerLost.
  static std::unique_ptr<TcpTransport> connect(Store& store, int rank, int world_size,
                                               const SessionId& session,
                                               TcpTransportOptions options = {});
  /// Over a connected mesh: `select` makes each peer's path; `link` is what every pair of the
  /// group has in common (traits()).
  TcpTransport(int rank, int world_size, TcpTransportOptions options,
               std::vector<std::optional<TcpLink>> data,
               std::vector<std::optional<TcpLink>> control, LinkKind link,
               const PeerPathSelector& select);
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  TransportTraits traits() const override { return TransportTraits{link_, false}; }
  void start_agree(const CallRecord& mine, const Deadline& deadline) override;
  void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                    const Deadline& deadline) override;
  void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
             const Deadline& deadline) override;
  /// Returns once the path no longer reads the buffer (the bytes are in the socket or the ring);
  /// the peer may not have read them yet.
  void wait_send(int peer, const Deadline& deadline) override;
  /// A path that lends pieces (shared memory): each consumed in place; else frame by frame
  /// through one piece-sized staging buffer.
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
  void observe_waits(bool on) noexcept override { waits_.observe(on); }
  PeerWait longest_wait() const noexcept override { return waits_.longest(); }

  /// Shuts the data connection to `peer` down (a cut link: the peer's next wait for this rank
  /// fails with PeerLost). For fault injection; safe from the rank's own thread only.
  void cut_link(int peer) noexcept;
  /// Shuts every connection down with no Goodbye, as if this process died (peers get PeerLost
  /// naming this rank). For fault injection (FaultHooks::kill_rank over TCP).
  void sever() noexcept;

  /// How messages to and from `peer` travel (SharedMemory: through its ring).
  LinkKind path_to(int peer) const { return paths_[static_cast<std::size_t>(peer)]->link(); }
  bool shares_memory_with(int peer) const { return path_to(peer) == LinkKind::SharedMemory; }

  /// Keeps `resource` (the store the group met in) alive as long as this transport.
  void keep_alive(std::shared_ptr<void> resource) { keep_alive_ = std::move(resource); }

 private:
  PeerPath& path(int peer) { return *paths_[static_cast<std::size_t>(peer)]; }
  /// Advances `r` as far as its path allows; true when done (PeerLost when the peer is gone).
  bool advance(PathReceive& r);
  /// Progresses every path's queued sends.
  void progress_all();
  /// Drives `step` (non-blocking progress; true when done) until done: spins, yields, then
  /// sleeps in poll() on what the paths arm (`readers`, which `step` may update, for reading).
  /// Throws the group's failure, PeerLost, or Timeout naming missing().
  template <typename Step, typename Missing>
  void drive(Step&& step, const std::vector<int>& readers, Missing&& missing,
             const Deadline& deadline, const char* what);
  /// One sleep of drive, in poll() on what the paths arm, unless a path moved before it could.
  void sleep(const std::vector<int>& readers, const Deadline& deadline);
  /// Everything every path has moved (any change is progress).
  std::uint64_t bytes_moved() const;
  /// Receives several records or messages into contiguous buffers concurrently.
  void receive_all(std::span<PathReceive> receives, const Deadline& deadline, const char* what);
  /// Fails the group with `error` and throws it (sends withdrawn first).
  [[noreturn]] void fail_and_throw(const CollectiveError& error);
  [[noreturn]] void throw_failure();
  /// A consumer threw: fails the group with that exception, then withdraws this rank's sends.
  /// Call inside a catch block.
  void fail_from_current_exception(const Deadline& deadline) noexcept;
  /// A path's step: throws PeerLost when the peer's connection closed.
  void check_step(int peer, PathStep step);
  /// The hang report ("; calls reached: ...") of a collective's timeout; "" for point-to-point.
  std::string calls_reached(const Deadline& deadline, const std::vector<int>& absent) const;

  int rank_;
  int world_;
  TcpTransportOptions options_;
  WaitPolicy wait_;
  LinkKind link_;
  std::unique_ptr<TcpFailureState> state_;
  std::vector<std::optional<TcpLink>> links_;  // the data connections, by peer
  std::unique_ptr<TcpControl> control_;
  std::vector<std::unique_ptr<PeerPath>> paths_;  // by peer; null for this rank
  WaitStats waits_;
  PollSet poll_set_;
  std::vector<std::uint8_t> staging_;                // one piece (recv_with)
  std::vector<std::vector<std::uint8_t>> gathered_;  // per peer (recv_all_with)
  std::vector<std::uint8_t> record_bytes_;           // encoded records, by rank
  std::shared_ptr<void> keep_alive_;
  // The hang report: the newest call number each rank is known to have started (this rank's
  // own, the peers' records received), and the call whose records finish_agree waits for.
  std::vector<std::uint64_t> calls_seen_;
  std::uint64_t agreeing_seq_ = 0;
};

}  // namespace ruccl
