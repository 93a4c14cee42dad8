#include "collective/transport/in_process/in_process_transport.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "collective/protocol/hang_report.h"
#include "collective/transport/in_process/in_process_wait.h"

namespace ruccl {

namespace {

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
      policy_(WaitPolicy::in_process(world_size)),
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
      str(deadline.call_name(), ": ", hub_->names().name(rank_)), rank_));
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

std::string InProcessTransport::calls_reached(const Deadline& deadline) const {
  if (deadline.transport_seq() == 0) return "";  // point-to-point or a group's: no call numbers
  // Each rank's newest published record: its two parity slots hold its last two calls.
  std::vector<std::uint64_t> reached(static_cast<std::size_t>(hub_->world_size()));
  for (int r = 0; r < hub_->world_size(); ++r) {
    const InProcessHub::RankState& state = hub_->rank_state(r);
    reached[static_cast<std::size_t>(r)] =
        std::max(state.records[0].seq.load(std::memory_order_acquire),
                 state.records[1].seq.load(std::memory_order_acquire));
  }
  return "; " + describe_calls_reached(reached, deadline.transport_seq(), hub_->names());
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
}  // namespace ruccl
