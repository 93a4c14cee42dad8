#include "collective/transport/in_process/in_process_transport.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "collective/protocol/hang_report.h"

namespace ruccl {

namespace {

std::string call_name(const Deadline& deadline) {
  return deadline.seq() > 0 ? str(deadline.label(), " (call #", deadline.seq(), ")")
                            : std::string(deadline.label());
}

// Point-to-point state word: bit 63 = sending, bits 40..62 = peer, bits 0..39 = message number.
std::uint64_t encode_p2p(bool sending, int peer, std::uint64_t number) {
  return (static_cast<std::uint64_t>(sending) << 63) | (static_cast<std::uint64_t>(peer) << 40) |
         (number & ((std::uint64_t{1} << 40) - 1));
}
struct P2PState {
  bool active;
  bool sending;
  int peer;
  std::uint64_t number;
};
P2PState decode_p2p(std::uint64_t word) {
  return {word != 0, (word >> 63) != 0, static_cast<int>((word >> 40) & ((1u << 23) - 1)),
          word & ((std::uint64_t{1} << 40) - 1)};
}

}  // namespace

// ---- hub ----------------------------------------------------------------------------------------

InProcessHub::InProcessHub(int world_size, RankNames names)
    : world_size_(world_size),
      names_(std::move(names)),
      policy_(WaitPolicy::for_group(world_size)),
      ranks_(new RankState[static_cast<std::size_t>(world_size)]),
      mail_(new Mailbox[static_cast<std::size_t>(world_size) *
                        static_cast<std::size_t>(world_size)]) {}

void InProcessHub::fail(const CollectiveError& error) noexcept {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_.has_value()) return;
    try {
      failure_.emplace(error);
    } catch (...) {
      failure_.emplace(CollectiveErrorKind::Aborted, "collective group failed");
    }
    failed_.store(true, std::memory_order_release);
  }
  bell_.ring();
}

void InProcessHub::cut_link(int a, int b) noexcept {
  mailbox(a, b).cut.store(true, std::memory_order_release);
  mailbox(b, a).cut.store(true, std::memory_order_release);
  anyone_gone_.store(true, std::memory_order_release);
  bell_.ring();
}

void InProcessHub::leave(int rank) noexcept {
  rank_state(rank).gone.store(true, std::memory_order_release);
  anyone_gone_.store(true, std::memory_order_release);
  bell_.ring();
}

CollectiveError InProcessHub::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  RUCCL_ASSERT(failure_.has_value(), "failure() called on a group that has not failed");
  return *failure_;
}

// ---- transport ----------------------------------------------------------------------------------

InProcessTransport::InProcessTransport(std::shared_ptr<InProcessHub> hub, int rank)
    : hub_(std::move(hub)),
      rank_(rank),
      sent_(static_cast<std::size_t>(hub_->world_size()), 0),
      received_(static_cast<std::size_t>(hub_->world_size()), 0) {}

InProcessTransport::~InProcessTransport() { hub_->leave(rank_); }

// Every failure this transport throws leaves this rank's sends withdrawn first: the caller's
// stack unwinds from here, and buffers it lent (a collective's output, a staging vector) are
// destroyed on the way, long before any catch block up the stack could withdraw them.
void InProcessTransport::throw_failure() {
  withdraw_sends();
  throw hub_->failure();
}

void InProcessTransport::fail_from_current_exception(const Deadline& deadline) noexcept {
  hub_->fail(current_exception_as_collective_error(
      str(call_name(deadline), ": ", hub_->names().name(rank_)), rank_));
  withdraw_sends();
}

void InProcessTransport::begin_point_to_point(int peer, bool sending) noexcept {
  p2p_sending_ = sending;
  p2p_peer_ = peer;
  const std::uint64_t number = (sending ? sent_ : received_)[static_cast<std::size_t>(peer)] + 1;
  hub_->rank_state(rank_).p2p.store(encode_p2p(sending, peer, number), std::memory_order_release);
  hub_->bell().ring();
}

void InProcessTransport::end_point_to_point() noexcept {
  p2p_peer_ = -1;
  hub_->rank_state(rank_).p2p.store(0, std::memory_order_release);
}

std::string InProcessTransport::p2p_deadlock(int peer, bool in_collective) const {
  const P2PState theirs = decode_p2p(hub_->rank_state(peer).p2p.load(std::memory_order_acquire));
  if (!theirs.active || theirs.peer != rank_) return "";
  // Is the peer's call still waiting for this rank? A send waits until this rank consumed its
  // first message; a recv waits until this rank posted the message it expects.
  const bool waits = theirs.sending ? received_[static_cast<std::size_t>(peer)] < theirs.number
                                    : sent_[static_cast<std::size_t>(peer)] < theirs.number;
  if (!waits) return "";
  const char* their_call = theirs.sending ? "send" : "recv";
  const RankNames& names = hub_->names();
  if (in_collective) {
    return str(names.name(peer), " is in ", their_call, (theirs.sending ? " to " : " from "),
               names.name(rank_), " while ", names.name(rank_), " is in a collective");
  }
  if (theirs.sending != p2p_sending_) return "";  // a matching send/recv pair: it will complete
  return str(names.name(rank_), " and ", names.name(peer), " are both in ", their_call,
             (theirs.sending ? " to" : " from"), " each other");
}

template <typename Ready, typename Missing>
void InProcessTransport::wait_for(Ready&& ready, Missing&& missing, const Deadline& deadline,
                                  const char* what) {
  auto lost = [&](int r) {
    return hub_->rank_state(r).gone.load(std::memory_order_acquire) || hub_->link_cut(rank_, r);
  };
  auto missing_gone = [&] {
    if (!hub_->anyone_gone()) return false;  // cheap check first: nobody has left
    for (int r : missing()) {
      if (lost(r)) return true;
    }
    return false;
  };
  // A point-to-point call that can never match this wait (checked against the ranks waited for).
  const bool in_collective = p2p_peer_ < 0;
  auto deadlock = [&]() -> std::string {
    if (in_collective) {
      for (int r : missing()) {
        std::string why = p2p_deadlock(r, true);
        if (!why.empty()) return why;
      }
      return "";
    }
    return p2p_deadlock(p2p_peer_, false);
  };
  auto any_p2p = [&] {
    for (int r = 0; r < hub_->world_size(); ++r) {
      if (hub_->rank_state(r).p2p.load(std::memory_order_relaxed) != 0) return true;
    }
    return false;
  };
  // A condition that woke the wait may be gone when it is read again (a peer's point-to-point
  // state moved on, a lost rank's record arrived after all): then wait again. Timeout only when
  // the deadline really passed.
  // While the trace records: the peer still missing at the last look is the one waited for.
  const bool observing = observing_waits();
  const auto wait_start = observing ? Deadline::Clock::now() : Deadline::Clock::time_point();
  int last_missing = -1;
  unsigned looks = 0;
  auto note_missing = [&] {
    if (!observing || (looks++ & 15) != 0) return;  // every 16th look: missing() allocates
    const std::vector<int> m = missing();
    if (!m.empty()) last_missing = m.back();
  };
  for (;;) {
    const bool done = hub_->bell().wait(
        [&] {
          if (ready()) return true;
          note_missing();
          return hub_->failed() || missing_gone() || (any_p2p() && !deadlock().empty());
        },
        deadline, hub_->policy());
    if (ready()) {
      if (observing && last_missing >= 0) {
        note_wait(last_missing, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    Deadline::Clock::now() - wait_start)
                                    .count());
      }
      return;
    }
    if (hub_->failed()) throw_failure();
    if (const std::string why = deadlock(); !why.empty()) {
      hub_->fail(CollectiveError(CollectiveErrorKind::CollectiveKindMismatch,
                                 str(call_name(deadline), ": ", why, ": the calls can never match"),
                                 {}));
      throw_failure();
    }
    const std::vector<int> absent = missing();
    std::vector<int> gone;
    bool any_cut = false;
    for (int r : absent) {
      if (!lost(r)) continue;
      gone.push_back(r);
      any_cut = any_cut || !hub_->rank_state(r).gone.load(std::memory_order_acquire);
    }
    if (!gone.empty()) {
      hub_->fail(CollectiveError(
          CollectiveErrorKind::PeerLost,
          str(call_name(deadline), ": ", hub_->names().name(rank_), " lost ",
              hub_->names().list(gone),
              any_cut ? " (the link was cut)" : " (their communicator was destroyed)",
              " while waiting for ", what),
          gone));
      throw_failure();
    }
    if (done && !deadline.expired()) continue;
    hub_->fail(CollectiveError(
        CollectiveErrorKind::Timeout,
        str(call_name(deadline), ": ", hub_->names().name(rank_), " timed out after ",
            deadline.timeout().count(), " ms waiting for ", what, " from ",
            hub_->names().list(absent), " that never arrived", calls_reached(deadline)),
        absent));
    throw_failure();
  }
}

std::string InProcessTransport::calls_reached(const Deadline& deadline) const {
  if (deadline.seq() == 0) return "";  // point-to-point: no call numbers
  // Each rank's newest published record: its two parity slots hold its last two calls.
  std::vector<std::uint64_t> reached(static_cast<std::size_t>(hub_->world_size()));
  for (int r = 0; r < hub_->world_size(); ++r) {
    const InProcessHub::RankState& state = hub_->rank_state(r);
    reached[static_cast<std::size_t>(r)] =
        std::max(state.records[0].seq.load(std::memory_order_acquire),
                 state.records[1].seq.load(std::memory_order_acquire));
  }
  return "; " + describe_calls_reached(reached, deadline.seq(), hub_->names());
}

void InProcessTransport::start_agree(const CallRecord& mine, const Deadline&) {
  if (hub_->failed()) throw_failure();
  InProcessHub::RecordSlot& slot = hub_->rank_state(rank_).records[mine.seq & 1];
  slot.record = mine;
  slot.seq.store(mine.seq, std::memory_order_release);
  hub_->bell().ring();
}

void InProcessTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                      const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_size());
  const std::uint64_t seq = mine.seq;
  const std::size_t parity = seq & 1;
  const int world = world_size();
  auto arrived = [&](int r) {
    return hub_->rank_state(r).records[parity].seq.load(std::memory_order_acquire) == seq;
  };
  wait_for(
      [&] {
        for (int r = 0; r < world; ++r) {
          if (!arrived(r)) return false;
        }
        return true;
      },
      [&] {
        std::vector<int> absent;
        for (int r = 0; r < world; ++r) {
          if (!arrived(r)) absent.push_back(r);
        }
        return absent;
      },
      deadline, "the call");
  for (int r = 0; r < world; ++r) {
    all[static_cast<std::size_t>(r)] = hub_->rank_state(r).records[parity].record;
  }
}

void InProcessTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                               const Deadline& deadline) {
  InProcessHub::Mailbox& box = hub_->mailbox(rank_, peer);
  const std::uint64_t previous = sent_[static_cast<std::size_t>(peer)];
  wait_for([&] { return box.consumed.load(std::memory_order_acquire) == previous; },
           [&] { return std::vector<int>{peer}; }, deadline, "a receive");
  box.tag = tag;
  box.data = data;
  box.nbytes = nbytes;
  box.posted.store(previous + 1, std::memory_order_release);
  sent_[static_cast<std::size_t>(peer)] = previous + 1;
  hub_->bell().ring();
}

void InProcessTransport::wait_send(int peer, const Deadline& deadline) {
  InProcessHub::Mailbox& box = hub_->mailbox(rank_, peer);
  const std::uint64_t target = sent_[static_cast<std::size_t>(peer)];
  wait_for([&] { return box.consumed.load(std::memory_order_acquire) == target; },
           [&] { return std::vector<int>{peer}; }, deadline, "a receive");
}

void InProcessTransport::check_message(int peer, const InProcessHub::Mailbox& box,
                                       std::uint64_t tag, std::size_t nbytes) {
  if (box.tag == tag && box.nbytes == nbytes) return;
  // Agreement makes this impossible for collectives; it means a protocol bug.
  CollectiveError error(
      CollectiveErrorKind::CollectiveKindMismatch,
      str(hub_->names().name(rank_), " expected message tag ", tag, " (", nbytes, " bytes) from ",
          hub_->names().name(peer), ", got tag ", box.tag, " (", box.nbytes, " bytes)"),
      {std::min(rank_, peer), std::max(rank_, peer)});
  hub_->fail(error);
  throw_failure();
}

// Receiving: wait until every sender posted, check the headers, claim the messages, hand them to
// `consume` in pieces (stopping between pieces when the group failed), then mark them consumed.
// The claims are released on every path, so a failing sender's withdraw_sends() never waits for
// a reader that left.
void InProcessTransport::claim(std::span<const int> peers) {
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const int p = peers[i];
    InProcessHub::Mailbox& box = hub_->mailbox(p, rank_);
    const std::uint64_t next = received_[static_cast<std::size_t>(p)] + 1;
    box.reading.store(next, std::memory_order_seq_cst);
    if (box.withdrawn.load(std::memory_order_seq_cst) >= next || hub_->failed()) {
      release(peers.first(i + 1), false);
      // A sender withdraws after the group failed, or when it dies (FaultAction::KillRank): then
      // it is this rank that finds out, and the group fails with PeerLost naming it.
      if (!hub_->failed()) {
        hub_->fail(
            CollectiveError(CollectiveErrorKind::PeerLost,
                            str(hub_->names().name(rank_), " lost ", hub_->names().name(p),
                                " (it withdrew its message and left) while waiting for a message"),
                            {p}));
      }
      throw_failure();
    }
  }
}

void InProcessTransport::release(std::span<const int> peers, bool consumed) noexcept {
  for (const int p : peers) {
    InProcessHub::Mailbox& box = hub_->mailbox(p, rank_);
    if (consumed) {
      const std::uint64_t next = ++received_[static_cast<std::size_t>(p)];
      box.consumed.store(next, std::memory_order_release);
    }
    box.reading.store(0, std::memory_order_seq_cst);
  }
  hub_->bell().ring();
}

template <typename Piece>
void InProcessTransport::read_pieces(std::span<const int> peers, std::size_t total,
                                     const Deadline& deadline, Piece&& piece) {
  std::size_t offset = 0;
  try {
    do {
      const std::size_t n = std::min(kPieceBytes, total - offset);
      piece(offset, n);
      offset += n;
    } while (offset < total && !hub_->failed());
  } catch (...) {  // the consumer threw: fail the group, so nobody waits for this rank
    release(peers, false);
    fail_from_current_exception(deadline);
    throw;
  }
  const bool complete = offset >= total;
  release(peers, complete);
  if (!complete) throw_failure();
}

void InProcessTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                                   const ConsumeFn& consume, const Deadline& deadline) {
  InProcessHub::Mailbox& box = hub_->mailbox(peer, rank_);
  const std::uint64_t next = received_[static_cast<std::size_t>(peer)] + 1;
  wait_for([&] { return box.posted.load(std::memory_order_acquire) >= next; },
           [&] { return std::vector<int>{peer}; }, deadline, "a message");
  check_message(peer, box, tag, nbytes);
  const int peers[1] = {peer};
  claim(peers);
  const auto* data = static_cast<const unsigned char*>(box.data);
  read_pieces(peers, nbytes, deadline,
              [&](std::size_t offset, std::size_t n) { consume(offset, data + offset, n); });
}

void InProcessTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                       std::span<const std::size_t> sizes,
                                       const ConsumeManyFn& consume, const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == sizes.size());
  auto posted = [&](std::size_t i) {
    const int p = peers[i];
    return hub_->mailbox(p, rank_).posted.load(std::memory_order_acquire) >=
           received_[static_cast<std::size_t>(p)] + 1;
  };
  wait_for(
      [&] {
        for (std::size_t i = 0; i < peers.size(); ++i) {
          if (!posted(i)) return false;
        }
        return true;
      },
      [&] {
        std::vector<int> absent;
        for (std::size_t i = 0; i < peers.size(); ++i) {
          if (!posted(i)) absent.push_back(peers[i]);
        }
        return absent;
      },
      deadline, "a message");
  constexpr std::size_t kInline = 16;
  const unsigned char* inline_base[kInline];
  const void* inline_data[kInline];
  std::vector<const unsigned char*> heap_base;
  std::vector<const void*> heap_data;
  const unsigned char** base = inline_base;
  const void** data = inline_data;
  if (peers.size() > kInline) {
    heap_base.resize(peers.size());
    heap_data.resize(peers.size());
    base = heap_base.data();
    data = heap_data.data();
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    InProcessHub::Mailbox& box = hub_->mailbox(peers[i], rank_);
    check_message(peers[i], box, tag, sizes[i]);
    base[i] = static_cast<const unsigned char*>(box.data);
    total = std::max(total, sizes[i]);
  }
  claim(peers);
  read_pieces(peers, total, deadline, [&](std::size_t offset, std::size_t n) {
    for (std::size_t i = 0; i < peers.size(); ++i) {
      data[i] = base[i] == nullptr ? nullptr : base[i] + std::min(offset, sizes[i]);
    }
    consume(offset, std::span<const void* const>(data, peers.size()), n);
  });
}

void InProcessTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                       std::span<void* const> dsts,
                                       std::span<const std::size_t> sizes,
                                       const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == dsts.size() && peers.size() == sizes.size());
  recv_all_with(
      peers, tag, sizes,
      [&](std::size_t offset, std::span<const void* const> data, std::size_t n) {
        for (std::size_t i = 0; i < peers.size(); ++i) {
          const std::size_t k = piece_bytes(sizes[i], offset, n);
          if (k != 0) std::memcpy(static_cast<unsigned char*>(dsts[i]) + offset, data[i], k);
        }
      },
      deadline);
}

void InProcessTransport::withdraw_sends() noexcept {
  const int world = world_size();
  for (int p = 0; p < world; ++p) {
    if (p == rank_) continue;
    InProcessHub::Mailbox& box = hub_->mailbox(rank_, p);
    const std::uint64_t sent = sent_[static_cast<std::size_t>(p)];
    if (box.consumed.load(std::memory_order_acquire) == sent) continue;  // nothing lent
    box.withdrawn.store(sent, std::memory_order_seq_cst);
  }
  // No deadline: a reader that claimed a message is in bounded work (one piece) and stops at the
  // next piece boundary once the group failed; returning before it stops would free its input.
  auto no_readers = [&] {
    for (int p = 0; p < world; ++p) {
      if (p != rank_ && hub_->mailbox(rank_, p).reading.load(std::memory_order_seq_cst) != 0) {
        return false;
      }
    }
    return true;
  };
  while (!hub_->bell().wait(no_readers, Deadline::after(std::chrono::seconds(1)), hub_->policy())) {
  }
}

}  // namespace ruccl
