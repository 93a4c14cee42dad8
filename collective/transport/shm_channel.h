#pragma once
// The shared-memory data path between two ranks of a TCP group on the same host (NCCL's SHM
// transport, OpenMPI's vader in spirit): each pair shares one segment in /dev/shm holding a ring
// per direction. A sender copies its message into the ring piece by piece (kPieceBytes slots);
// the receiver folds a piece straight out of its slot (recv_with: no staging copy) or copies it
// into the caller's buffer (recv_into), then frees the slot. Over loopback TCP every byte is
// copied twice by the kernel (into the socket buffer, out of it) with the protocol's work
// around it; through a ring it is copied once.
//
// The ring is single-producer single-consumer: `tail` (pieces published) is written only by the
// sender, `head` (pieces freed) only by the receiver; a slot's header (tag, message size, offset,
// length) and its bytes are written before `tail` moves past it and read after. A side that
// finds nothing to do may sleep: it raises its flag (reader_sleeping or writer_sleeping), checks
// the ring once more, and sleeps in poll() on its LocalBell; the other side, after moving its
// counter, checks the flag and rings the bell. Both sides use sequentially consistent operations
// for the flag and the counter, so at least one of them sees the other's write (no lost wake-up).
//
// Everything else (agreement records, heartbeats, failure, Goodbye) stays on the pair's TCP
// connections: a peer that dies is noticed there (TcpControl), and a ring never blocks anyone
// beyond their deadline.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collective/net/socket.h"
#include "collective/transport/tcp_frame.h"

namespace ruccl {

/// What two ranks must share to use a ShmChannel: the same kernel boot, network namespace (the
/// bell's abstract socket), mount namespace (/dev/shm) and user. "" when it cannot be told (then
/// the rank shares memory with nobody).
std::string shared_memory_host_identity();

/// A rank's wake-up: an abstract-namespace Unix datagram socket named for the group and the rank.
/// A peer that published into a ring whose other side sleeps sends it one byte; the sleeper
/// polls the descriptor beside its TCP sockets.
class LocalBell {
 public:
  /// Binds "\0ruccl-<group>-<rank>". InvalidConfig with the system's reason when it cannot.
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

/// One piece of a message in a ring slot, as its sender described it.
struct ShmPiece {
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
  /// system's reason.
  static std::unique_ptr<ShmChannel> create(const std::string& name, const SessionBytes& session,
                                            int rank, int peer, std::size_t ring_bytes);
  /// The higher rank's side of the segment `create` made; checks its size and header (magic,
  /// version, slots, session, ranks). InvalidConfig naming what differs.
  static std::unique_ptr<ShmChannel> open(const std::string& name, const SessionBytes& session,
                                          int rank, int peer, std::size_t ring_bytes);
  /// Removes the segment's name (both sides keep their mapping). Never throws.
  static void unlink(const std::string& name) noexcept;
  ~ShmChannel();
  ShmChannel(const ShmChannel&) = delete;
  ShmChannel& operator=(const ShmChannel&) = delete;

  // ---- sending (one caller's message at a time) ------------------------------------------------
  /// Whether a message is still being copied into the ring (its buffer is still read).
  bool sending() const { return sending_; }
  /// Starts copying `nbytes` at `data` (valid until !sending() or drop_send()).
  void start_send(std::uint64_t tag, const void* data, std::size_t nbytes);
  /// Copies as many pieces as there are free slots. True when the reader sleeps: ring its bell.
  bool pump();
  /// Forgets the message being sent (the group failed).
  void drop_send() noexcept { sending_ = false; }

  // ---- receiving ------------------------------------------------------------------------------
  /// The next published piece, or nullptr when the ring is empty. Valid until release().
  const ShmPiece* peek();
  /// Frees the piece peek() returned. True when the writer sleeps: ring its bell.
  bool release();

  // ---- ordering against the agreement records (which travel over TCP) ------------------------
  /// Before this rank's record of call `seq` goes to the peer: notes in the ring how many pieces
  /// precede it (published, and those of a message still being copied).
  void note_record(std::uint64_t seq);
  /// After the peer's record of call `seq` arrived: how many of the pieces that preceded it this
  /// rank has not consumed (0 when the calls line up: more is a message the peer sent that this
  /// rank never received, a point-to-point send against this rank's collective), or -1 when the
  /// peer noted no record `seq` (a malformed ring).
  std::int64_t unread_before_record(std::uint64_t seq) const;

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
  ShmPiece piece_;
};

}  // namespace ruccl
