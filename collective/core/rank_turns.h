#pragma once
// RankTurns: the order in which one rank's calls use its transport, shared by a communicator and
// every group split from it (Communicator::split). A group's messages travel on its parent's
// links, one message per direction at a time, and a transport serves one thread at a time; so a
// rank's calls on a parent and its groups run one after another, in the order the rank made them
// (its program order), whichever thread runs them (the caller's, or a progress thread for
// *_async calls). A call takes a ticket when it is made and waits for its turn before it runs.
//
// Per rank, never global: calls of disjoint groups (different ranks) never wait for each other.
// A rank alone costs two atomic operations per call (its turn has always come).
#include <atomic>
#include <cstdint>

namespace ruccl {

class RankTurns {
 public:
  /// The next ticket, in the order calls are made.
  std::uint32_t take() noexcept { return next_.fetch_add(1, std::memory_order_acq_rel); }
  /// Waits until every call with an earlier ticket is done. Bounded by their deadlines (each
  /// earlier call ends by its own deadline, or at once when its group fails).
  void wait(std::uint32_t ticket) const noexcept {
    std::uint32_t now = serving_.load(std::memory_order_acquire);
    while (now != ticket) {
      serving_.wait(now, std::memory_order_acquire);
      now = serving_.load(std::memory_order_acquire);
    }
  }
  /// Ends the turn of `ticket` (the one being served).
  void done(std::uint32_t ticket) noexcept {
    serving_.store(ticket + 1, std::memory_order_release);
    serving_.notify_all();
  }

 private:
  std::atomic<std::uint32_t> next_{0};
  std::atomic<std::uint32_t> serving_{0};
};

/// A call's turn: waits for it on construction, ends it on destruction.
class RankTurn {
 public:
  RankTurn(RankTurns& turns, std::uint32_t ticket) noexcept : turns_(&turns), ticket_(ticket) {
    turns_->wait(ticket_);
  }
  RankTurn(const RankTurn&) = delete;
  RankTurn& operator=(const RankTurn&) = delete;
  ~RankTurn() { turns_->done(ticket_); }

 private:
  RankTurns* turns_;
  std::uint32_t ticket_;
};

}  // namespace ruccl
