#pragma once
// The control side of a TCP group: the failure state every thread of a rank shares, and the
// control connections (one per peer, beside the data connection) that a watcher thread serves.
//
// The watcher reads every control frame as it arrives, whatever the rank's own thread is doing:
// an Abort from a peer finishes the group here at once; a Goodbye marks the peer gone (it
// destroyed its transport normally); EOF or a reset without a Goodbye (the process died), a
// malformed frame, or no heartbeat for heartbeat_timeout (the process is stopped or its host
// unreachable) fails the group with PeerLost naming the peer, and tells every other peer. It
// also sends this rank's heartbeats. The rank's thread, waiting in a collective, polls the wake
// descriptor beside its data sockets, so a failure reaches it within one system call.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/rank_names.h"
#include "collective/transport/tcp/tcp_link.h"
#include "collective/transport/tcp/tcp_options.h"

namespace ruccl {

/// The first failure of the group as this rank knows it, which peers are gone, and the wake
/// descriptor (an eventfd) the rank's thread polls. Safe from any thread.
class TcpFailureState {
 public:
  explicit TcpFailureState(int world_size);
  ~TcpFailureState();
  TcpFailureState(const TcpFailureState&) = delete;
  TcpFailureState& operator=(const TcpFailureState&) = delete;

  /// Records `error` unless a failure is recorded already; true when this one was the first.
  bool record(const CollectiveError& error) noexcept;
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  CollectiveError failure() const;

  void mark_gone(int rank) noexcept;
  bool gone(int rank) const noexcept;
  bool anyone_gone() const noexcept { return anyone_gone_.load(std::memory_order_acquire); }

  int wake_fd() const { return wake_fd_; }
  /// Wakes the rank's thread from its poll (it re-checks failed() and gone()).
  void wake() noexcept;
  /// Consumes pending wake-ups (after a poll reported the descriptor readable).
  void drain_wake() noexcept;

 private:
  std::atomic<bool> failed_{false};
  std::atomic<bool> anyone_gone_{false};
  std::unique_ptr<std::atomic<bool>[]> gone_;
  int wake_fd_ = -1;
  mutable std::mutex mutex_;
  std::optional<CollectiveError> failure_;
};

/// The control connections of one rank and the watcher thread that serves them.
class TcpControl {
 public:
  /// `links[p]`: the control connection to peer p (none for this rank). Starts the watcher.
  TcpControl(std::vector<std::optional<TcpLink>> links, int rank, RankNames names,
             TcpControlOptions options, TcpFailureState& state);
  /// Says Goodbye to every peer (unless the group failed), stops the watcher, closes.
  ~TcpControl();

  /// Records `error` as the group's failure; when it is the first, sends it to every peer as an
  /// Abort and wakes the rank's thread. Safe from any thread; never throws.
  void fail(const CollectiveError& error) noexcept;
  /// Shuts every control connection down at once, with no Goodbye: what peers see when this
  /// process dies (fault injection). This rank's watcher reports nothing afterwards.
  void sever() noexcept;

 private:
  void run() noexcept;
  /// Reads every complete frame peer `p` has sent; false when the connection is finished.
  bool serve(int p, std::chrono::steady_clock::time_point now);
  /// Queues a frame for every live peer and writes what the sockets take (under send_mutex_).
  void broadcast(FrameType type, const std::vector<std::uint8_t>& payload) noexcept;
  void lose(int p, const std::string& why) noexcept;

  std::vector<std::optional<TcpLink>> links_;
  std::vector<std::chrono::steady_clock::time_point> last_heard_;
  std::vector<bool> open_;    // the watcher still reads peer p's connection
  std::vector<bool> closed_;  // this rank's end of stream to p is sent (under send_mutex_)
  std::vector<std::uint8_t> payload_;
  int rank_;
  RankNames names_;
  TcpControlOptions options_;
  TcpFailureState& state_;
  std::mutex send_mutex_;  // guards every link's send queue
  int stop_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> leaving_{false};  // this rank said Goodbye: peers closing is expected
  std::thread watcher_;
};

}  // namespace ruccl
