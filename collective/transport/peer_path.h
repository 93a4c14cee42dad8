#pragma once
// PeerPath: how the process transport (transport/process/process_transport.h) moves a rank's bytes
// to and from one peer. The transport keeps the mesh of TCP connections, the control channel and
// the progress loop (it spins, yields, then sleeps in poll(): common/wait_policy.h); a path does
// the non-blocking steps for its peer. Each peer's path is chosen at connect, the best kind that
// reaches it first, as NCCL's selectTransport does (process/process_connect.cpp): shared memory
// where both ranks can map one segment (shm/shm_path.h), else the TCP data connection itself
// (tcp/tcp_path.h), which tests may decorate with wire faults (fault/wire_fault_path.h). Another
// kind (cross-memory attach, RDMA) is another PeerPath and one more line of that selection.
//
// A path carries a call's agreement record, then the call's messages, in order each way. Every
// step does what it can now and returns: none blocks (the transport decides when to wait). A
// step throws CollectiveError for what the peer sent wrong (a kind mismatch, a malformed piece)
// and returns PathStep::Closed when the peer's connection ended: the transport turns either into
// the group's failure. Only the rank's own thread calls a path.
#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/rank_names.h"
#include "collective/transport/transport_traits.h"

namespace ruccl {

/// The outcome of a non-blocking step of a path.
enum class PathStep : unsigned char {
  Done,     ///< the receive (or every queued send) is complete
  Pending,  ///< nothing more for now
  Closed,   ///< the peer's connection ended (EOF, reset)
};

/// A record or message (or a run of its pieces) being received from one peer: the piece at
/// message offset `got` lands at dst + (got - dst_offset); done once a piece ends at or past
/// `until`.
struct PathReceive {
  int peer;
  bool record;  ///< an agreement record (tag = the call's number), not a message
  std::uint64_t tag;
  std::size_t nbytes;  ///< a message: its size; a record: the buffer's, then the record's
  std::uint8_t* dst;
  std::size_t until;
  std::size_t got = 0;
  std::size_t dst_offset = 0;
  bool done = false;
};

/// A piece of a message that a path lends in place (PeerPath::lend): valid until give_back.
struct LentPiece {
  const std::uint8_t* data = nullptr;
  std::size_t nbytes = 0;
};

/// The descriptors one sleep of the progress loop polls, filled by the paths (PeerPath::arm).
class PollSet {
 public:
  void clear() noexcept { fds_.clear(); }
  /// Adds `fd` for `events`; returns its index.
  std::size_t add(int fd, short events) {
    fds_.push_back(pollfd{fd, events, 0});
    return fds_.size() - 1;
  }
  /// Adds `fd` unless it is there already (a descriptor several paths share); returns its index.
  std::size_t add_shared(int fd, short events) {
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      if (fds_[i].fd == fd) {
        fds_[i].events = static_cast<short>(fds_[i].events | events);
        return i;
      }
    }
    return add(fd, events);
  }
  short revents(std::size_t i) const { return fds_[i].revents; }
  /// The events of `i`, once (a shared descriptor is handled by the first path that asks).
  short take(std::size_t i) noexcept {
    const short events = fds_[i].revents;
    fds_[i].revents = 0;
    return events;
  }
  /// poll() for at most `timeout_ms`.
  void wait(int timeout_ms) { ::poll(fds_.data(), fds_.size(), timeout_ms); }

 private:
  std::vector<pollfd> fds_;
};

class PeerPath {
 public:
  virtual ~PeerPath() = default;
  /// How this path moves bytes (Copying over TCP, SharedMemory through a ring).
  virtual LinkKind link() const noexcept = 0;

  // ---- sending: one caller's message at a time, behind the records queued before it ---------
  /// Whether the next call's record can be queued now (a path with bounded room: not before the
  /// peer read what came before the last one).
  virtual bool can_queue_record() const noexcept { return true; }
  /// Queues this rank's encoded record of call `seq` (copied); it goes out with the next step.
  virtual void queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded) = 0;
  /// Whether a posted message still reads its caller's buffer (post no other before it ends).
  virtual bool borrows() const noexcept = 0;
  /// Posts `nbytes` at `data` (valid until !borrows() or drop_sends()) and moves what it can.
  virtual PathStep post_send(std::uint64_t tag, const void* data, std::size_t nbytes) = 0;
  /// Moves queued records and messages as far as possible: Pending while some is left.
  virtual PathStep progress_sends() = 0;
  /// Forgets everything queued (the group failed; the caller's buffers may be released now).
  virtual void drop_sends() noexcept = 0;

  // ---- receiving -----------------------------------------------------------------------------
  /// Advances `r` (not done) as far as possible, copying into r.dst: Done once r.done.
  virtual PathStep advance(PathReceive& r) = 0;
  /// Whether the path lends a message's pieces in place (lend, give_back): a fold then reads
  /// them where they are, with no staging copy. Else the transport stages them through advance.
  virtual bool lends_pieces() const noexcept { return false; }
  /// The next piece of message `r` in place, checked against it: false while there is none.
  virtual bool lend(PathReceive& r, LentPiece& piece) {
    (void)r;
    (void)piece;
    return false;
  }
  /// Frees the piece lend() gave and moves `r` past it.
  virtual void give_back(PathReceive& r, const LentPiece& piece) {
    (void)r;
    (void)piece;
  }

  // ---- waiting -------------------------------------------------------------------------------
  /// Everything this path has moved either way (a wait spins on while it moves).
  virtual std::uint64_t bytes_moved() const noexcept = 0;
  /// Before a sleep: raises whatever asks the peer to wake this rank (`reading`: this rank waits
  /// for the peer's bytes). False when something moved meanwhile (do not sleep).
  virtual bool prepare_to_sleep(bool reading) {
    (void)reading;
    return true;
  }
  /// Adds the descriptors whose events end a sleep for this path.
  virtual void arm(PollSet& set, bool reading) = 0;
  /// After the sleep: undoes prepare_to_sleep and reads what woke it. Closed when the peer's
  /// connection ended; throws for what the peer should not have sent.
  virtual PathStep woke(PollSet& set, bool reading) {
    (void)set;
    (void)reading;
    return PathStep::Pending;
  }

  /// CollectiveError(PeerLost) naming the peer: it sent something malformed (`why`).
  virtual CollectiveError malformed(const std::string& why) const = 0;
};

/// CollectiveKindMismatch: a record (`got_record`) or a message came where `r` expected the
/// other: a collective against a point-to-point call, which can never match.
CollectiveError path_kind_mismatch(const RankNames& names, int rank, const PathReceive& r,
                                   bool got_record);
/// CollectiveKindMismatch: a message of `tag` and `nbytes` came where `r` was expected.
CollectiveError path_message_mismatch(const RankNames& names, int rank, const PathReceive& r,
                                      std::uint64_t tag, std::uint64_t nbytes);

}  // namespace ruccl
