// The process transport's calls: agreement, sends, receives, failure. Its progress loop is in
// process_progress.cpp, connecting in process_connect.cpp.
#include "collective/transport/process/process_transport.h"

#include <sched.h>
#include <sys/socket.h>

#include <algorithm>

#include "collective/net/peer_auth.h"
#include "collective/protocol/call_record_codec.h"
#include "collective/protocol/hang_report.h"
#include "collective/transport/process/process_progress.h"

namespace ruccl {

TcpTransport::TcpTransport(int rank, int world_size, TcpTransportOptions options,
                           std::vector<std::optional<TcpLink>> data,
                           std::vector<std::optional<TcpLink>> control, LinkKind link,
                           const PeerPathSelector& select)
    : rank_(rank),
      world_(world_size),
      options_(std::move(options)),
      wait_(WaitPolicy::process(options_.local_ranks, options_.spin, options_.yield)),
      link_(link),
      state_(std::make_unique<TcpFailureState>(world_size)),
      links_(std::move(data)),
      paths_(static_cast<std::size_t>(world_size)),
      staging_(kPieceBytes),
      gathered_(static_cast<std::size_t>(world_size)),
      record_bytes_(static_cast<std::size_t>(world_size) * kMaxEncodedCallRecordBytes),
      calls_seen_(static_cast<std::size_t>(world_size), 0) {
  control_ = std::make_unique<TcpControl>(std::move(control), rank_, options_.names,
                                          options_.control, *state_);
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    paths_[static_cast<std::size_t>(p)] =
        select(p, *links_[static_cast<std::size_t>(p)], options_.names);
  }
}

TcpTransport::~TcpTransport() {
  // Whatever is still queued was written by a caller that returned (wait_send): flush it, but
  // never wait long for a peer that does not read.
  const auto until = Deadline::Clock::now() + std::chrono::seconds(1);
  while (!state_->failed() && Deadline::Clock::now() < until) {
    bool drained = true;
    for (auto& path : paths_) {
      if (path && path->progress_sends() == PathStep::Pending) drained = false;
    }
    if (drained) break;
    sched_yield();
  }
  control_.reset();  // Goodbye, then close
}

void TcpTransport::throw_failure() {
  withdraw_sends();
  throw state_->failure();
}

void TcpTransport::fail_and_throw(const CollectiveError& error) {
  control_->fail(error);
  throw_failure();
}

void TcpTransport::fail_from_current_exception(const Deadline& deadline) noexcept {
  control_->fail(current_exception_as_collective_error(
      str(deadline.call_name(), ": ", options_.names.name(rank_)), rank_));
  withdraw_sends();
}

void TcpTransport::withdraw_sends() noexcept {
  // Sends are written by this thread only, so forgetting them is immediate: no peer reads this
  // rank's memory (the kernel or the ring has its own copy of what was written).
  for (auto& path : paths_) {
    if (path) path->drop_sends();
  }
}

void TcpTransport::check_step(int peer, PathStep step) {
  if (step != PathStep::Closed) return;
  if (state_->failed()) throw_failure();
  const bool left = state_->gone(peer);
  fail_and_throw(CollectiveError(
      CollectiveErrorKind::PeerLost,
      str(options_.names.name(rank_), " lost ", options_.names.name(peer),
          left ? ": it left the group (its communicator was destroyed)"
               : ": its connection closed (the process died or the network failed)"),
      {peer}));
}

std::string TcpTransport::calls_reached(const Deadline& deadline,
                                        const std::vector<int>& absent) const {
  std::string text = calls_reached_from_records(calls_seen_, agreeing_seq_, absent,
                                                deadline.transport_seq(), options_.names);
  // Strangers this process refused (an impostor rank, a flood): often why a rank never came.
  if (const std::string refused = net::auth_refusals_summary(); !refused.empty()) {
    text += str("; ", refused);
  }
  return text;
}

void TcpTransport::start_agree(const CallRecord& mine, const Deadline& deadline) {
  if (state_->failed()) throw_failure();
  calls_seen_[static_cast<std::size_t>(rank_)] = mine.seq;
  std::vector<std::uint8_t> encoded;
  encode_call_record(mine, encoded);
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    PeerPath& to = path(p);
    // A path with bounded room still holds the previous call's record only when the peer has
    // not read what came before it (a send it never received): wait for room, or for the group
    // to fail when the peer finds the message in the place of a record.
    if (!to.can_queue_record()) {
      drive([&] { return to.can_queue_record(); }, {}, [&] { return std::vector<int>{p}; },
            deadline, "room for its record (a receive)");
    }
    to.queue_record(mine.seq, encoded);
  }
  // Not sent yet: the first isend to each peer (or finish_agree) sends the record with it.
}

void TcpTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_);
  std::vector<PathReceive> receives;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    std::uint8_t* slot =
        record_bytes_.data() + static_cast<std::size_t>(p) * kMaxEncodedCallRecordBytes;
    receives.push_back(PathReceive{p, true, mine.seq, kMaxEncodedCallRecordBytes, slot,
                                   kMaxEncodedCallRecordBytes});
  }
  agreeing_seq_ = mine.seq;
  receive_all(receives, deadline, "the call");
  agreeing_seq_ = 0;
  all[static_cast<std::size_t>(rank_)] = mine;
  for (const PathReceive& r : receives) {
    CallRecord& record = all[static_cast<std::size_t>(r.peer)];
    const std::string why =
        decode_call_record(std::span<const std::uint8_t>(r.dst, r.nbytes), record);
    if (!why.empty()) fail_and_throw(path(r.peer).malformed(why));
    if (record.seq != mine.seq) {
      fail_and_throw(path(r.peer).malformed(
          str("the record of call #", record.seq, " in a frame of call #", mine.seq)));
    }
    calls_seen_[static_cast<std::size_t>(r.peer)] = record.seq;
  }
}

void TcpTransport::cut_link(int peer) noexcept {
  auto& link = links_[static_cast<std::size_t>(peer)];
  if (link) ::shutdown(link->fd(), SHUT_RDWR);
}

void TcpTransport::sever() noexcept {
  control_->sever();
  for (int p = 0; p < world_; ++p) cut_link(p);
}

void TcpTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                         const Deadline& deadline) {
  if (state_->failed()) throw_failure();
  PeerPath& to = path(peer);
  // One caller's buffer per direction in flight (the Transport contract: the previous buffer may
  // be reused once the next isend returns), then posted behind the call's record.
  if (to.borrows()) wait_send(peer, deadline);
  try {
    check_step(peer, to.post_send(tag, data, nbytes));
  } catch (const CollectiveError& e) {
    fail_and_throw(e);
  }
}

void TcpTransport::wait_send(int peer, const Deadline& deadline) {
  const PeerPath& to = path(peer);
  const std::vector<int> none;
  drive([&] { return !to.borrows(); }, none, [&] { return std::vector<int>{peer}; }, deadline,
        "its send buffer to drain (a receive)");
}

void TcpTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                             const Deadline& deadline) {
  PathReceive r{peer, false, tag, nbytes, static_cast<std::uint8_t*>(dst), nbytes};
  receive_all(std::span<PathReceive>(&r, 1), deadline, "a message");
}

void TcpTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                 std::span<void* const> dsts, std::span<const std::size_t> sizes,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == dsts.size() && peers.size() == sizes.size());
  std::vector<PathReceive> receives;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    receives.push_back(
        PathReceive{peers[i], false, tag, sizes[i], static_cast<std::uint8_t*>(dsts[i]), sizes[i]});
  }
  receive_all(receives, deadline, "a message");
}

void TcpTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                             const ConsumeFn& consume, const Deadline& deadline) {
  PeerPath& from = path(peer);
  if (from.lends_pieces()) {
    // Piece by piece, each consumed where the path holds it (no staging copy), then given back.
    PathReceive r{peer, false, tag, nbytes, nullptr, nbytes};
    const std::vector<int> readers{peer};
    do {
      LentPiece piece;
      drive([&] { return from.lend(r, piece); }, readers, [&] { return readers; }, deadline,
            "a message");
      try {
        consume(r.got, piece.data, piece.nbytes);
      } catch (...) {
        fail_from_current_exception(deadline);
        throw;
      }
      from.give_back(r, piece);
    } while (!r.done);
    return;
  }
  // Piece by piece into one piece-sized buffer: each verified piece is one consumed piece.
  std::size_t offset = 0;
  do {
    const std::size_t n = std::min(kPieceBytes, nbytes - offset);
    PathReceive r{peer, false, tag, nbytes, staging_.data(), offset + n, offset, offset};
    receive_all(std::span<PathReceive>(&r, 1), deadline, "a message");
    try {
      consume(offset, staging_.data(), n);
    } catch (...) {
      fail_from_current_exception(deadline);
      throw;
    }
    offset += n;
  } while (offset < nbytes);
}

void TcpTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                 std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == sizes.size());
  std::vector<PathReceive> receives;
  std::size_t total = 0;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    auto& buffer = gathered_[static_cast<std::size_t>(peers[i])];
    if (buffer.size() < sizes[i]) buffer.resize(sizes[i]);
    receives.push_back(PathReceive{peers[i], false, tag, sizes[i], buffer.data(), sizes[i]});
    total = std::max(total, sizes[i]);
  }
  receive_all(receives, deadline, "a message");
  std::vector<const void*> data(peers.size());
  std::size_t offset = 0;
  try {
    do {
      const std::size_t n = std::min(kPieceBytes, total - offset);
      for (std::size_t i = 0; i < peers.size(); ++i) {
        data[i] = receives[i].dst + std::min(offset, sizes[i]);
      }
      consume(offset, data, n);
      offset += n;
    } while (offset < total);
  } catch (...) {
    fail_from_current_exception(deadline);
    throw;
  }
}

}  // namespace ruccl
