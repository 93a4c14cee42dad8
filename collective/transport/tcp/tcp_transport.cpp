#include "collective/transport/tcp/tcp_transport.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "collective/protocol/hang_report.h"
#include "collective/protocol/call_record_codec.h"

namespace ruccl {

namespace {

bool oversubscribed(const TcpTransportOptions& options) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::max(1, options.local_ranks)) > cores;
}

std::chrono::nanoseconds spin_time(const TcpTransportOptions& options) {
  if (options.spin.count() > 0) return options.spin;
  return oversubscribed(options) ? std::chrono::nanoseconds(std::chrono::microseconds(2))
                                 : std::chrono::nanoseconds(std::chrono::microseconds(50));
}

std::chrono::nanoseconds yield_time(const TcpTransportOptions& options) {
  if (options.yield.count() >= 0) return options.yield;
  return oversubscribed(options) ? std::chrono::nanoseconds(std::chrono::microseconds(100))
                                 : std::chrono::nanoseconds(0);
}

}  // namespace

TcpTransport::TcpTransport(int rank, int world_size, SessionBytes session,
                           TcpTransportOptions options, std::vector<std::optional<TcpLink>> data,
                           std::vector<std::optional<TcpLink>> control, SharedMemoryPeers shm)
    : rank_(rank),
      world_(world_size),
      session_(session),
      options_(std::move(options)),
      spin_(spin_time(options_)),
      yield_(spin_ + yield_time(options_)),
      state_(std::make_unique<TcpFailureState>(world_size)),
      links_(std::move(data)),
      shm_(std::move(shm)),
      staging_(kPieceBytes),
      gathered_(static_cast<std::size_t>(world_size)),
      record_bytes_(static_cast<std::size_t>(world_size) * kMaxEncodedCallRecordBytes),
      messages_sent_(static_cast<std::size_t>(world_size), 0),
      dropping_(static_cast<std::size_t>(world_size), false),
      calls_seen_(static_cast<std::size_t>(world_size), 0) {
  shm_.channels.resize(static_cast<std::size_t>(world_size));
  control_ = std::make_unique<TcpControl>(std::move(control), rank_, options_.names,
                                          options_.control, *state_);
}

TcpTransport::~TcpTransport() {
  // Whatever is still queued was written by a caller that returned (wait_send): flush it, but
  // never wait long for a peer that does not read.
  const auto until = Deadline::Clock::now() + std::chrono::seconds(1);
  while (!state_->failed() && Deadline::Clock::now() < until) {
    bool drained = true;
    for (auto& link : links_) {
      if (link && link->flush() == LinkStep::Pending) drained = false;
    }
    for (int p = 0; p < world_; ++p) {
      if (pump(p)) drained = false;
    }
    if (drained) break;
    sched_yield();
  }
  control_.reset();  // Goodbye, then close
}

std::string TcpTransport::call_name(const Deadline& deadline) const {
  return deadline.seq() > 0 ? str(deadline.label(), " (call #", deadline.seq(), ")")
                            : std::string(deadline.label());
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
      str(call_name(deadline), ": ", options_.names.name(rank_)), rank_));
  withdraw_sends();
}

void TcpTransport::withdraw_sends() noexcept {
  // Sends are written by this thread only, so forgetting them is immediate: no peer reads this
  // rank's memory (the kernel copied what was written).
  for (auto& link : links_) {
    if (link) link->drop_sends();
  }
  for (auto& ch : shm_.channels) {
    if (ch) ch->drop_send();
  }
}

void TcpTransport::check_step(int peer, LinkStep step) {
  if (step != LinkStep::Closed) return;
  if (state_->failed()) throw_failure();
  const bool left = state_->gone(peer);
  fail_and_throw(CollectiveError(
      CollectiveErrorKind::PeerLost,
      str(options_.names.name(rank_), " lost ", options_.names.name(peer),
          left ? ": it left the group (its communicator was destroyed)"
               : ": its connection closed (the process died or the network failed)"),
      {peer}));
}

void TcpTransport::flush_all() {
  for (int p = 0; p < world_; ++p) {
    auto& link = links_[static_cast<std::size_t>(p)];
    if (link && !link->drained()) check_step(p, link->flush());
    pump(p);
  }
}

bool TcpTransport::pump(int peer) {
  ShmChannel* ch = channel(peer);
  if (ch == nullptr || !ch->has_output()) return false;
  if (ch->pump()) {
    ++shm_moved_;
    shm_.bell->ring(peer);
  }
  return ch->has_output();
}

CollectiveError TcpTransport::message_mismatch(const Receive& r, std::uint64_t tag,
                                               std::uint64_t nbytes) const {
  return CollectiveError(
      CollectiveErrorKind::CollectiveKindMismatch,
      str(options_.names.name(rank_), " expected message tag ", r.tag, " (", r.nbytes,
          " bytes) from ", options_.names.name(r.peer), ", got tag ", tag, " (", nbytes, " bytes)"),
      {std::min(rank_, r.peer), std::max(rank_, r.peer)});
}

CollectiveError TcpTransport::kind_mismatch(const Receive& r, bool got_record) const {
  // A peer in a collective while this rank is in a point-to-point call, or the other way round.
  return CollectiveError(
      CollectiveErrorKind::CollectiveKindMismatch,
      str(options_.names.name(rank_), " expected ",
          r.type == FrameType::Record ? "the agreement record of a collective"
                                      : "a message of a send or collective",
          " from ", options_.names.name(r.peer), ", got ",
          got_record ? "the record of a collective" : "a message", ": the calls can never match"),
      {std::min(rank_, r.peer), std::max(rank_, r.peer)});
}

void TcpTransport::check_frame(const Receive& r, const FrameHeader& h) {
  const TcpLink& link = *links_[static_cast<std::size_t>(r.peer)];
  if (h.type != r.type) fail_and_throw(kind_mismatch(r, h.type == FrameType::Record));
  if (h.type == FrameType::Record) {
    if (h.tag != r.tag) {
      link.protocol_error(str("the record of call #", h.tag, " (expected call #", r.tag, ")"));
    }
    if (h.payload_bytes > kMaxEncodedCallRecordBytes) {
      link.protocol_error(str("a record of ", h.payload_bytes, " bytes (at most ",
                              kMaxEncodedCallRecordBytes, ")"));
    }
    return;
  }
  if (h.tag != r.tag || h.message_bytes != r.nbytes)
    fail_and_throw(message_mismatch(r, h.tag, h.message_bytes));
  const std::size_t expected = std::min(kPieceBytes, r.nbytes - r.got);
  if (h.payload_bytes != expected) {
    link.protocol_error(str("frame of ", h.payload_bytes, " bytes at offset ", r.got, " of a ",
                            r.nbytes, "-byte message (expected ", expected, ")"));
  }
}

const ShmPiece* TcpTransport::next_piece(Receive& r) {
  const ShmPiece* piece = channel(r.peer)->peek();
  if (piece == nullptr) return nullptr;
  ++shm_moved_;
  if (piece->record != (r.type == FrameType::Record))
    fail_and_throw(kind_mismatch(r, piece->record));
  const TcpLink& link = *links_[static_cast<std::size_t>(r.peer)];
  if (piece->record) {
    if (piece->tag != r.tag) {
      fail_and_throw(link.malformed(
          str("a shared-memory record of call #", piece->tag, " (expected call #", r.tag, ")")));
    }
    if (piece->nbytes > kMaxEncodedCallRecordBytes || piece->offset != 0 ||
        piece->message_bytes != piece->nbytes) {
      fail_and_throw(
          link.malformed(str("a shared-memory record of ", piece->nbytes, " bytes at offset ",
                             piece->offset, " (at most ", kMaxEncodedCallRecordBytes, ", whole)")));
    }
    return piece;
  }
  if (piece->tag != r.tag || piece->message_bytes != r.nbytes) {
    fail_and_throw(message_mismatch(r, piece->tag, piece->message_bytes));
  }
  const std::size_t expected = std::min(kPieceBytes, r.nbytes - r.got);
  if (piece->offset != r.got || piece->nbytes != expected) {
    fail_and_throw(link.malformed(str("a shared-memory piece of ", piece->nbytes,
                                      " bytes at offset ", piece->offset, " (expected ", expected,
                                      " at ", r.got, " of a ", r.nbytes, "-byte message)")));
  }
  return piece;
}

void TcpTransport::check_quiet_link(int peer) {
  TcpLink& link = *links_[static_cast<std::size_t>(peer)];
  const LinkStep step = link.read_header();
  if (step == LinkStep::Pending) return;
  // A peer that left after its last call published its messages before it closed: they come
  // first (the wait ends on them, or finds the link closed again with the ring empty).
  if (channel(peer)->peek() != nullptr) return;
  check_step(peer, step);
  link.protocol_error("a frame from a peer that sends through shared memory");
}

void TcpTransport::release_piece(Receive& r, const ShmPiece& piece) {
  r.got += piece.nbytes;
  if (piece.record) r.nbytes = piece.nbytes;
  if (piece.record || r.got >= r.until) r.done = true;
  if (channel(r.peer)->release()) shm_.bell->ring(r.peer);
}

bool TcpTransport::advance(Receive& r) {
  if (r.done) return true;
  if (channel(r.peer) != nullptr) {
    while (!r.done) {
      const ShmPiece* piece = next_piece(r);
      if (piece == nullptr) return false;
      if (piece->nbytes != 0)
        std::memcpy(r.dst + (r.got - r.dst_offset), piece->data, piece->nbytes);
      release_piece(r, *piece);
    }
    return true;
  }
  TcpLink& link = *links_[static_cast<std::size_t>(r.peer)];
  for (;;) {
    LinkStep step = link.read_header();
    check_step(r.peer, step);
    if (step == LinkStep::Pending) return false;
    const FrameHeader& h = link.incoming().header;
    check_frame(r, h);  // again after a partial payload: the checks depend only on r and h
    step = link.read_payload(r.dst + (r.got - r.dst_offset));
    check_step(r.peer, step);
    if (step == LinkStep::Pending) return false;
    r.got += h.payload_bytes;
    if (r.type == FrameType::Record) r.nbytes = h.payload_bytes;
    if (r.type == FrameType::Record || r.got >= r.until) {
      r.done = true;
      return true;
    }
  }
}

template <typename Step, typename Missing>
void TcpTransport::drive(Step&& step, const std::vector<int>& readers, Missing&& missing,
                         const Deadline& deadline, const char* what) {
  const auto start = Deadline::Clock::now();
  // The spin and the yield restart whenever bytes move: a wait sleeps only after a quiet spell,
  // not on every frame of a long message that is still streaming in.
  auto quiet_since = start;
  std::uint64_t moved = bytes_moved();
  std::vector<pollfd> fds;
  int last_missing = -1;  // while the trace records: the peer this wait ended on
  for (std::uint32_t i = 1;; ++i) {
    if (state_->failed()) throw_failure();
    try {
      flush_all();
      if (step()) {
        if (last_missing >= 0) {
          note_wait(last_missing, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      Deadline::Clock::now() - start)
                                      .count());
        }
        return;
      }
    } catch (const CollectiveError& e) {  // a malformed frame, a lost peer: the group fails
      fail_and_throw(e);
    }
    if (observing_waits() && !readers.empty()) last_missing = readers.back();
    const auto now = Deadline::Clock::now();
    if (deadline.expired(now)) break;
    if (const std::uint64_t m = bytes_moved(); m != moved) {
      moved = m;
      quiet_since = now;
    }
    if (now - quiet_since < spin_) continue;
    if (now - quiet_since < yield_) {
      sched_yield();
      continue;
    }
    if (!prepare_to_sleep(readers)) continue;  // a ring moved meanwhile
    fds.clear();
    fds.push_back(pollfd{state_->wake_fd(), POLLIN, 0});
    if (shm_.bell) fds.push_back(pollfd{shm_.bell->fd(), POLLIN, 0});
    const std::size_t first_reader = fds.size();  // readers' data connections from here
    for (const int p : readers) {
      auto& link = links_[static_cast<std::size_t>(p)];
      if (channel(p) == nullptr) link->arm_wakeup();  // a shared-memory peer's link stays quiet
      fds.push_back(pollfd{link->fd(), POLLIN, 0});
    }
    for (int p = 0; p < world_; ++p) {
      auto& link = links_[static_cast<std::size_t>(p)];
      if (link && !link->drained()) fds.push_back(pollfd{link->fd(), POLLOUT, 0});
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline.at() - now);
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(left.count(), 1, 100)));
    if (fds[0].revents & POLLIN) state_->drain_wake();
    if (shm_.bell) {
      if (fds[1].revents & POLLIN) shm_.bell->drain();
      for (auto& ch : shm_.channels) {
        if (ch) ch->woke();
      }
      for (std::size_t i = 0; i < readers.size(); ++i) {
        if (channel(readers[i]) == nullptr || fds[first_reader + i].revents == 0) continue;
        try {
          check_quiet_link(readers[i]);
        } catch (const CollectiveError& e) {
          fail_and_throw(e);
        }
      }
    }
  }
  const std::vector<int> absent = missing();
  fail_and_throw(CollectiveError(
      CollectiveErrorKind::Timeout,
      str(call_name(deadline), ": ", options_.names.name(rank_), " timed out after ",
          deadline.timeout().count(), " ms waiting for ", what, " from ",
          options_.names.list(absent), " that never arrived", calls_reached(deadline, absent)),
      absent));
}

std::uint64_t TcpTransport::bytes_moved() const {
  std::uint64_t moved = shm_moved_;
  for (const auto& link : links_) {
    if (link) moved += link->bytes_moved();
  }
  return moved;
}

bool TcpTransport::prepare_to_sleep(const std::vector<int>& readers) {
  if (!shm_.bell) return true;
  bool sleep = true;
  for (const int p : readers) {
    ShmChannel* ch = channel(p);
    if (ch != nullptr && ch->sleep_reading()) sleep = false;
  }
  for (auto& ch : shm_.channels) {
    if (ch && ch->has_output() && ch->sleep_writing()) sleep = false;
  }
  return sleep;
}

void TcpTransport::receive_all(std::span<Receive> receives, const Deadline& deadline,
                               const char* what) {
  std::vector<int> readers;
  auto step = [&] {
    bool all = true;
    readers.clear();  // sleep only on the peers still missing
    for (Receive& r : receives) {
      if (!advance(r)) {
        all = false;
        readers.push_back(r.peer);
      }
    }
    return all;
  };
  auto missing = [&] { return readers; };
  drive(step, readers, missing, deadline, what);
}

std::string TcpTransport::calls_reached(const Deadline& deadline,
                                        const std::vector<int>& absent) const {
  return calls_reached_from_records(calls_seen_, agreeing_seq_, absent, deadline.seq(),
                                    options_.names);
}

void TcpTransport::start_agree(const CallRecord& mine, const Deadline& deadline) {
  if (state_->failed()) throw_failure();
  calls_seen_[static_cast<std::size_t>(rank_)] = mine.seq;
  call_fault();
  std::vector<std::uint8_t> encoded;
  encode_call_record(mine, encoded);
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    if (ShmChannel* ch = channel(p)) {
      // The previous call's record is still waiting for a slot only when the peer has not read
      // what came before it (a send it never received): wait for the slot, or for the group to
      // fail when the peer finds the message in the place of a record.
      if (ch->record_pending()) {
        drive([&] { return !ch->record_pending(); }, {}, [&] { return std::vector<int>{p}; },
              deadline, "a slot of its shared-memory ring (a receive)");
      }
      ch->queue_record(mine.seq, encoded);
    } else {
      links_[static_cast<std::size_t>(p)]->queue_owned(FrameType::Record, mine.seq, encoded);
    }
  }
  // Not written yet: the first isend to each peer (or finish_agree) writes the record with it.
}

void TcpTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_);
  std::vector<Receive> receives;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    std::uint8_t* slot =
        record_bytes_.data() + static_cast<std::size_t>(p) * kMaxEncodedCallRecordBytes;
    receives.push_back(Receive{p, FrameType::Record, mine.seq, kMaxEncodedCallRecordBytes, slot,
                               kMaxEncodedCallRecordBytes});
  }
  agreeing_seq_ = mine.seq;
  receive_all(receives, deadline, "the call");
  agreeing_seq_ = 0;
  all[static_cast<std::size_t>(rank_)] = mine;
  for (const Receive& r : receives) {
    CallRecord& record = all[static_cast<std::size_t>(r.peer)];
    const std::string why =
        decode_call_record(std::span<const std::uint8_t>(r.dst, r.nbytes), record);
    const TcpLink& link = *links_[static_cast<std::size_t>(r.peer)];
    if (!why.empty()) fail_and_throw(link.malformed(why));
    if (record.seq != mine.seq) {
      fail_and_throw(link.malformed(
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

WireFault TcpTransport::wire_fault(int peer) {
  WireFault fault;
  const std::uint64_t k = messages_sent_[static_cast<std::size_t>(peer)]++;
  fault.drop = dropping_[static_cast<std::size_t>(peer)];
  if (options_.wire_faults.empty()) return fault;
  const FaultRule* rule = options_.wire_faults.for_message(peer, k);
  if (rule == nullptr) return fault;
  switch (rule->action) {
    case FaultAction::Delay:
      std::this_thread::sleep_for(rule->delay);
      break;
    case FaultAction::Drop:
      dropping_[static_cast<std::size_t>(peer)] = true;
      fault.drop = true;
      break;
    case FaultAction::Duplicate:
      fault.duplicate = true;
      break;
    case FaultAction::Corrupt:
      fault.corrupt = true;
      break;
    case FaultAction::Cut:
      cut_link(peer);
      break;
    case FaultAction::KillRank:
      kill_self();
      break;
  }
  return fault;
}

void TcpTransport::call_fault() {
  const std::uint64_t k = calls_++;
  if (options_.wire_faults.empty()) return;
  const FaultRule* rule = options_.wire_faults.for_call(k);
  if (rule == nullptr) return;
  if (rule->action == FaultAction::Delay) std::this_thread::sleep_for(rule->delay);
  if (rule->action == FaultAction::KillRank) kill_self();
  if (rule->action == FaultAction::Cut) {
    for (int p = 0; p < world_; ++p) {
      if (p != rank_ && (rule->peer < 0 || rule->peer == p)) cut_link(p);
    }
  }
}

void TcpTransport::kill_self() {
  if (options_.kill) {
    options_.kill();
    return;
  }
  ::raise(SIGKILL);
}

void TcpTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                         const Deadline& deadline) {
  if (state_->failed()) throw_failure();
  TcpLink& link = *links_[static_cast<std::size_t>(peer)];
  if (ShmChannel* ch = channel(peer)) {
    // Into the ring as far as it has room, behind the call's record (queued by start_agree):
    // the receiver is woken once, and finds both.
    if (ch->sending()) wait_send(peer, deadline);
    ch->start_send(tag, data, nbytes);
    pump(peer);
    return;
  }
  // One caller's buffer per direction in flight (the Transport contract: the previous buffer may
  // be reused once the next isend returns; queued records are the link's own copies), then
  // queued behind them and written as far as the socket takes, in one sendmsg with them.
  if (link.borrows()) wait_send(peer, deadline);
  link.queue_data(tag, data, nbytes, wire_fault(peer));
  try {
    check_step(peer, link.flush());
  } catch (const CollectiveError& e) {
    fail_and_throw(e);
  }
}

void TcpTransport::wait_send(int peer, const Deadline& deadline) {
  TcpLink& link = *links_[static_cast<std::size_t>(peer)];
  const ShmChannel* ch = channel(peer);
  const std::vector<int> none;
  drive([&] { return !link.borrows() && (ch == nullptr || !ch->sending()); }, none,
        [&] { return std::vector<int>{peer}; }, deadline, "its send buffer to drain (a receive)");
}

void TcpTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                             const Deadline& deadline) {
  Receive r{peer, FrameType::Data, tag, nbytes, static_cast<std::uint8_t*>(dst), nbytes};
  receive_all(std::span<Receive>(&r, 1), deadline, "a message");
}

void TcpTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                 std::span<void* const> dsts, std::span<const std::size_t> sizes,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == dsts.size() && peers.size() == sizes.size());
  std::vector<Receive> receives;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    receives.push_back(Receive{peers[i], FrameType::Data, tag, sizes[i],
                               static_cast<std::uint8_t*>(dsts[i]), sizes[i]});
  }
  receive_all(receives, deadline, "a message");
}

void TcpTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                             const ConsumeFn& consume, const Deadline& deadline) {
  if (channel(peer) != nullptr) {
    // Piece by piece, each consumed in its slot (no staging copy), then freed.
    Receive r{peer, FrameType::Data, tag, nbytes, nullptr, nbytes};
    const std::vector<int> readers{peer};
    do {
      const ShmPiece* piece = nullptr;
      drive([&] { return (piece = next_piece(r)) != nullptr; }, readers, [&] { return readers; },
            deadline, "a message");
      try {
        consume(r.got, piece->data, piece->nbytes);
      } catch (...) {
        fail_from_current_exception(deadline);
        throw;
      }
      release_piece(r, *piece);
    } while (!r.done);
    return;
  }
  // Frame by frame into one piece-sized buffer: each verified frame is one consumed piece.
  std::size_t offset = 0;
  do {
    const std::size_t n = std::min(kPieceBytes, nbytes - offset);
    Receive r{peer, FrameType::Data, tag, nbytes, staging_.data(), offset + n, offset, offset};
    receive_all(std::span<Receive>(&r, 1), deadline, "a message");
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
  std::vector<Receive> receives;
  std::size_t total = 0;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    auto& buffer = gathered_[static_cast<std::size_t>(peers[i])];
    if (buffer.size() < sizes[i]) buffer.resize(sizes[i]);
    receives.push_back(Receive{peers[i], FrameType::Data, tag, sizes[i], buffer.data(), sizes[i]});
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
