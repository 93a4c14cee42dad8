// InProcessTransport's receives: wait until every sender posted, check the headers, claim the
// messages, read them in place in pieces, then mark them consumed; and withdraw_sends. The rest
// of the transport is in in_process_transport.cpp.
#include <algorithm>
#include <cstring>

#include "collective/transport/in_process/in_process_wait.h"

namespace ruccl {

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
