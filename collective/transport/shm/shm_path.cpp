#include "collective/transport/shm/shm_path.h"

#include <algorithm>
#include <cstring>

#include "collective/protocol/call_record_codec.h"

namespace ruccl {

ShmPath::ShmPath(std::unique_ptr<ShmChannel> channel, std::shared_ptr<LocalBell> bell,
                 TcpLink& quiet, int rank, int peer, const RankNames& names)
    : channel_(std::move(channel)),
      bell_(std::move(bell)),
      quiet_(quiet),
      rank_(rank),
      peer_(peer),
      names_(names) {}

PathStep ShmPath::progress_sends() {
  if (!channel_->has_output()) return PathStep::Done;
  if (channel_->pump()) {
    ++moved_;
    bell_->ring(peer_);
  }
  return channel_->has_output() ? PathStep::Pending : PathStep::Done;
}

const ShmPiece* ShmPath::next_piece(PathReceive& r) {
  const ShmPiece* piece = channel_->peek();
  if (piece == nullptr) return nullptr;
  ++moved_;
  if (piece->record != r.record) throw path_kind_mismatch(names_, rank_, r, piece->record);
  if (piece->record) {
    if (piece->tag != r.tag) {
      throw quiet_.malformed(
          str("a shared-memory record of call #", piece->tag, " (expected call #", r.tag, ")"));
    }
    if (piece->nbytes > kMaxEncodedCallRecordBytes || piece->offset != 0 ||
        piece->message_bytes != piece->nbytes) {
      throw quiet_.malformed(str("a shared-memory record of ", piece->nbytes, " bytes at offset ",
                                 piece->offset, " (at most ", kMaxEncodedCallRecordBytes,
                                 ", whole)"));
    }
    return piece;
  }
  if (piece->tag != r.tag || piece->message_bytes != r.nbytes) {
    throw path_message_mismatch(names_, rank_, r, piece->tag, piece->message_bytes);
  }
  const std::size_t expected = std::min(kPieceBytes, r.nbytes - r.got);
  if (piece->offset != r.got || piece->nbytes != expected) {
    throw quiet_.malformed(str("a shared-memory piece of ", piece->nbytes, " bytes at offset ",
                               piece->offset, " (expected ", expected, " at ", r.got, " of a ",
                               r.nbytes, "-byte message)"));
  }
  return piece;
}

void ShmPath::release(PathReceive& r, const ShmPiece& piece) {
  r.got += piece.nbytes;
  if (piece.record) r.nbytes = piece.nbytes;
  if (piece.record || r.got >= r.until) r.done = true;
  if (channel_->release()) bell_->ring(peer_);
}

PathStep ShmPath::advance(PathReceive& r) {
  while (!r.done) {
    const ShmPiece* piece = next_piece(r);
    if (piece == nullptr) return PathStep::Pending;
    if (piece->nbytes != 0) {
      std::memcpy(r.dst + (r.got - r.dst_offset), piece->data, piece->nbytes);
    }
    release(r, *piece);
  }
  return PathStep::Done;
}

bool ShmPath::lend(PathReceive& r, LentPiece& piece) {
  lent_ = next_piece(r);
  if (lent_ == nullptr) return false;
  piece = LentPiece{lent_->data, lent_->nbytes};
  return true;
}

void ShmPath::give_back(PathReceive& r, const LentPiece& piece) {
  (void)piece;
  release(r, *lent_);
  lent_ = nullptr;
}

bool ShmPath::prepare_to_sleep(bool reading) {
  bool sleep = true;
  if (reading && channel_->sleep_reading()) sleep = false;
  if (channel_->has_output() && channel_->sleep_writing()) sleep = false;
  return sleep;
}

void ShmPath::arm(PollSet& set, bool reading) {
  bell_index_ = set.add_shared(bell_->fd(), POLLIN);
  if (reading) quiet_index_ = set.add(quiet_.fd(), POLLIN);
}

PathStep ShmPath::woke(PollSet& set, bool reading) {
  if (set.take(bell_index_) & POLLIN) bell_->drain();
  channel_->woke();
  if (!reading || set.revents(quiet_index_) == 0) return PathStep::Pending;
  const LinkStep step = quiet_.read_header();
  if (step == LinkStep::Pending) return PathStep::Pending;
  // A peer that left after its last call published its messages before it closed: they come
  // first (the wait ends on them, or finds the connection closed again with the ring empty).
  if (channel_->peek() != nullptr) return PathStep::Pending;
  if (step == LinkStep::Closed) return PathStep::Closed;
  quiet_.protocol_error("a frame from a peer that sends through shared memory");
}

}  // namespace ruccl
