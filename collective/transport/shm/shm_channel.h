#pragma once
// The shared-memory rings between two ranks of one host, under their peer path (shm_path.h;
// NCCL's SHM transport, OpenMPI's vader in spirit): each pair shares one segment in /dev/shm
// holding a ring per direction. A sender copies its message into the ring piece by piece
// (kPieceBytes slots); the receiver folds a piece straight out of its slot (recv_with: no staging
// copy) or copies it into the caller's buffer (recv_into), then frees the slot: one copy per byte
// where loopback TCP makes two (docs/performance-history.md, "## Shared memory between processes
// of one host").
//
// The ring is single-producer single-consumer: `tail` (pieces published) is written only by the
// sender, `head` (pieces freed) only by the receiver; a slot's header (kind, tag, message size,
// offset, length) and its bytes are written before `tail` moves past it and read after. A side that
// finds nothing to do may sleep: it raises its flag (reader_sleeping or writer_sleeping), checks
// the ring once more, and sleeps in poll() on its LocalBell; the other side, after moving its
// counter, checks the flag and rings the bell. Both sides use sequentially consistent operations
// for the flag and the counter, so at least one of them sees the other's write (no lost wake-up).
//
// A call's agreement record goes through the ring too, as a piece of its own ahead of the call's
// messages (the order a TCP stream would give them), so a small collective between two ranks of
// one host makes no system call unless a side sleeps. Heartbeats, failures and Goodbye stay on
// the pair's TCP connections: a peer that dies is noticed there (TcpControl), and a ring never
// blocks anyone beyond their deadline.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/net/socket.h"
#include "collective/transport/tcp/tcp_frame.h"

namespace ruccl {

/// What two ranks must share to use a ShmChannel: the same kernel boot, network namespace (the
/// bell's abstract socket), mount namespace (/dev/shm) and user. "" when it cannot be told (then
/// the rank shares memory with nobody).
std::string shared_memory_host_identity();

/// A name of the shared-memory set-up (the bell's socket, a segment) that is already taken by
/// someone else: the set-up fails with this on every rank, never falls back silently.
class ShmNameTaken : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

/// A rank's wake-up: an abstract-namespace Unix datagram socket named for the group and the rank.
/// A peer that published into a ring whose other side sleeps sends it one byte; the sleeper
/// polls the descriptor beside its TCP sockets.
class LocalBell {
 public:
  /// Binds "\0ruccl-<group>-<rank>". ShmNameTaken when another process holds the name;
  /// InvalidConfig with the system's reason when it cannot otherwise. The bell carries no data:
  /// a datagram from anyone else is at most a spurious wake-up (the rings are checked again).
  LocalBell(std::string group, int rank);
  int fd() const { return socket_.fd(); }
  /// Wakes `peer`'s bell (best effort: a full queue already holds a wake-up; a gone peer is
  /// noticed on TCP).
  void ring(int peer) noexcept;
  /// Reads every pending wake-up.
  void drain() noexcept;

 private:
  net::Socket socket_;
  std::string group_;
};

/// One piece of a message in a ring slot, as its sender described it; or an agreement record
/// (`record`: tag = the call's number, one piece holding the encoded record).
struct ShmPiece {
  bool record = false;
  std::uint64_t tag = 0;
  std::uint64_t message_bytes = 0;
  std::uint64_t offset = 0;
  std::uint64_t nbytes = 0;
  const std::uint8_t* data = nullptr;
};

class ShmChannel {
 public:
  /// The segment of ranks `rank` < `peer`, created by the lower rank: `ring_bytes` per direction
  /// (rounded down to whole kPieceBytes slots, at least 2), reserved with posix_fallocate so a
  /// full /dev/shm fails here (not as SIGBUS later). InvalidConfig naming the segment and the
  /// system's reason; ShmNameTaken when the name exists and belongs to another user.
  static std::unique_ptr<ShmChannel> create(const std::string& name, const SessionId& session,
                                            int rank, int peer, std::size_t ring_bytes);
  /// The higher rank's side of the segment `create` made; checks its size and header (magic,
  /// version, slots, session, ranks) and that it is this user's with mode 0600. InvalidConfig
  /// naming what differs.
  static std::unique_ptr<ShmChannel> open(const std::string& name, const SessionId& session,
                                          int rank, int peer, std::size_t ring_bytes);
  /// Removes the segment's name (both sides keep their mapping). Never throws.
  static void unlink(const std::string& name) noexcept;
  ~ShmChannel();
  ShmChannel(const ShmChannel&) = delete;
  ShmChannel& operator=(const ShmChannel&) = delete;

  // ---- sending (one caller's message at a time) ------------------------------------------------
  /// Whether a message is still being copied into the ring (its buffer is still read).
  bool sending() const { return sending_; }
  /// Whether anything is still to publish: a message, or a record (the channel's own copy).
  bool has_output() const { return sending_ || record_pending_; }
  /// Starts copying `nbytes` at `data` (valid until !sending() or drop_send()).
  void start_send(std::uint64_t tag, const void* data, std::size_t nbytes);
  /// Whether a record queued by queue_record is still to publish (the ring was full).
  bool record_pending() const { return record_pending_; }
  /// Queues this rank's encoded record of call `seq` (at most kPieceBytes; copied; none
  /// pending): it goes after the message being copied, if any, and before the next one.
  void queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded);
  /// Copies as many pieces as there are free slots. True when the reader sleeps: ring its bell.
  bool pump();
  /// Forgets the message and the record being sent (the group failed).
  void drop_send() noexcept { sending_ = record_pending_ = false; }

  // ---- receiving ------------------------------------------------------------------------------
  /// The next published piece, or nullptr when the ring is empty. Valid until release().
  const ShmPiece* peek();
  /// Frees the piece peek() returned. True when the writer sleeps: ring its bell.
  bool release();

  // ---- sleeping -------------------------------------------------------------------------------
  /// Raises this side's reader flag; true when a piece arrived meanwhile (do not sleep).
  bool sleep_reading();
  /// Raises this side's writer flag; true when a slot freed meanwhile (do not sleep).
  bool sleep_writing();
  /// Lowers both flags after a sleep.
  void woke();

  struct RingControl;
  struct SlotHeader;

 private:
  /// One direction's ring: where its counters, slot headers and slot bytes lie in the mapping.
  struct Ring {
    RingControl* control;
    SlotHeader* headers;
    std::uint8_t* data;
  };
  ShmChannel(void* base, std::size_t bytes, std::uint32_t slots, bool low);
  enum class Published : std::uint8_t { None, Record, Data };
  /// Publishes the next piece (the record or the message's) if a slot is free.
  Published publish_one();
  /// Lowers the reader's flag; true when it was raised (the reader sleeps: ring its bell).
  bool take_reader_flag();

  void* base_;
  std::size_t bytes_;
  std::uint32_t slots_;
  Ring out_;
  Ring in_;
  bool sending_ = false;
  std::uint64_t tag_ = 0;
  const std::uint8_t* data_ = nullptr;
  std::size_t nbytes_ = 0;
  std::size_t offset_ = 0;
  bool record_pending_ = false;
  bool record_first_ = false;  ///< the record goes before the message being copied
  std::uint64_t record_seq_ = 0;
  std::vector<std::uint8_t> record_;
  ShmPiece piece_;
};

}  // namespace ruccl
