#pragma once
// ShmPath: the peer path (transport/peer_path.h) through the pair's shared-memory rings
// (shm_channel.h), for two ranks of one host. Records and messages go through the rings; the
// pair's TCP data connection stays quiet, watched only for its close (a peer that died, noticed
// there). The rank's LocalBell, shared by its shared-memory paths, wakes it from a sleep.
#include <memory>

#include "collective/protocol/pieces.h"
#include "collective/transport/peer_path.h"
#include "collective/transport/shm/shm_channel.h"
#include "collective/transport/tcp/tcp_link.h"

namespace ruccl {

class ShmPath final : public PeerPath {
 public:
  /// Rank `rank`'s path to `peer` through `channel`; `quiet` is the pair's data connection (must
  /// outlive the path), `bell` the rank's bell.
  ShmPath(std::unique_ptr<ShmChannel> channel, std::shared_ptr<LocalBell> bell, TcpLink& quiet,
          int rank, int peer, const RankNames& names);

  LinkKind link() const noexcept override { return LinkKind::SharedMemory; }
  /// Not while the last record still waits for a slot (the peer has not read what came before).
  bool can_queue_record() const noexcept override { return !channel_->record_pending(); }
  void queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded) override {
    channel_->queue_record(seq, encoded);
  }
  bool borrows() const noexcept override { return channel_->sending(); }
  /// Into the ring as far as it has room, behind the call's record: the receiver is woken once,
  /// and finds both.
  PathStep post_send(std::uint64_t tag, const void* data, std::size_t nbytes) override {
    channel_->start_send(tag, data, nbytes);
    return progress_sends();
  }
  PathStep progress_sends() override;
  void drop_sends() noexcept override { channel_->drop_send(); }
  PathStep advance(PathReceive& r) override;
  bool lends_pieces() const noexcept override { return true; }
  /// A piece in its slot: a fold reads it there (no staging copy).
  bool lend(PathReceive& r, LentPiece& piece) override;
  void give_back(PathReceive& r, const LentPiece& piece) override;
  /// Pieces received and published, and the quiet connection's bytes.
  std::uint64_t bytes_moved() const noexcept override { return moved_ + quiet_.bytes_moved(); }
  /// Raises the ring's sleep flags this rank waits on: the reader's (`reading`), the writer's
  /// (output left).
  bool prepare_to_sleep(bool reading) override;
  /// The bell, and the quiet connection while reading.
  void arm(PollSet& set, bool reading) override;
  /// Drains the bell, lowers the flags, and reads the quiet connection if it woke: its close
  /// (Closed) or a frame (malformed), either only once the ring is empty (a peer that left after
  /// its last call published that call's messages first).
  PathStep woke(PollSet& set, bool reading) override;
  CollectiveError malformed(const std::string& why) const override { return quiet_.malformed(why); }

 private:
  /// The next published piece of `r`, checked against it, or nullptr while there is none.
  const ShmPiece* next_piece(PathReceive& r);
  /// Frees `piece` (the one next_piece returned), waking the peer if it waits for a slot.
  void release(PathReceive& r, const ShmPiece& piece);

  std::unique_ptr<ShmChannel> channel_;
  std::shared_ptr<LocalBell> bell_;
  TcpLink& quiet_;
  int rank_;
  int peer_;
  const RankNames& names_;
  std::uint64_t moved_ = 0;  // pieces received and published
  const ShmPiece* lent_ = nullptr;
  std::size_t bell_index_ = 0;   // in the PollSet of the current sleep
  std::size_t quiet_index_ = 0;  // valid while reading
};

}  // namespace ruccl
