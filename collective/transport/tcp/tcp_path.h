#pragma once
// TcpPath: the peer path (transport/peer_path.h) over the pair's TCP data connection (TcpLink):
// records and messages as frames of at most kPieceBytes, written straight from the caller's
// buffer, each header checked against what the receiver expects before its payload lands in the
// receiver's buffer. The path every pair of ranks can take; the process transport chooses it
// where no faster one reaches the peer.
#include "collective/protocol/pieces.h"
#include "collective/transport/peer_path.h"
#include "collective/transport/tcp/tcp_link.h"

namespace ruccl {

class TcpPath final : public PeerPath {
 public:
  /// Rank `rank`'s path over `link` (its data connection to link's peer; must outlive the path).
  TcpPath(TcpLink& link, int rank, int peer, const RankNames& names)
      : link_(link), rank_(rank), peer_(peer), names_(names) {}

  LinkKind link() const noexcept override { return LinkKind::Copying; }
  void queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded) override {
    link_.queue_owned(FrameType::Record, seq,
                      std::vector<std::uint8_t>(encoded.begin(), encoded.end()));
  }
  bool borrows() const noexcept override { return link_.borrows(); }
  PathStep post_send(std::uint64_t tag, const void* data, std::size_t nbytes) override {
    return post_send(tag, data, nbytes, WireFault{});
  }
  /// post_send with `fault` injected below the framing (WireFaultPath).
  PathStep post_send(std::uint64_t tag, const void* data, std::size_t nbytes, WireFault fault);
  PathStep progress_sends() override;
  void drop_sends() noexcept override { link_.drop_sends(); }
  PathStep advance(PathReceive& r) override;
  std::uint64_t bytes_moved() const noexcept override { return link_.bytes_moved(); }
  /// Reading: the link's SO_RCVLOWAT mark first (TcpLink::arm_wakeup), so the kernel wakes this
  /// rank once the bytes its next step needs are there. Queued sends: writable.
  void arm(PollSet& set, bool reading) override;
  CollectiveError malformed(const std::string& why) const override { return link_.malformed(why); }

  int peer() const { return peer_; }
  TcpLink& tcp_link() { return link_; }

 private:
  /// Checks a frame header against `r` (throws CollectiveError).
  void check_frame(const PathReceive& r, const FrameHeader& h) const;

  TcpLink& link_;
  int rank_;
  int peer_;
  const RankNames& names_;
};

}  // namespace ruccl
