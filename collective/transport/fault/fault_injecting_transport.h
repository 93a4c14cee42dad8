#pragma once
// FaultInjectingTransport: a Transport wrapper for tests that applies a FaultPlan (fault_plan.h)
// to the messages and calls of one rank: delays, drops, duplicates or corrupts a message, cuts a
// link, or kills the rank at a given message or call. Everything else is forwarded to the inner
// transport unchanged, so with an empty plan it is a pass-through (the test harness runs the
// whole collective coverage table through it to prove that).
//
// With `copying` it also behaves like a copying (network) transport over any inner one: isend
// copies the message into a buffer the wrapper owns, so wait_send returns at once (the caller's
// buffer may be reused, the peer has not necessarily received anything); its link kind is
// Copying (Auto picks Ring for large messages; every rank still shares the address space);
// recv_all_with is recv_all_by_copy and recv_all_into the Transport default (one recv_into per
// peer). The coverage table runs through that too, which proves no algorithm relies on wait_send
// meaning "the peer consumed it".
//
//   auto hub = std::make_shared<InProcessHub>(2);
//   FaultPlan plan;
//   plan.add(FaultRule::on_message(FaultAction::Drop, 1, 0));
//   FaultHooks hooks{[hub] { hub->leave(0); }, [hub](int peer) { hub->cut_link(0, peer); }};
//   auto t = std::make_unique<FaultInjectingTransport>(
//       std::make_unique<InProcessTransport>(hub, 0), plan, hooks);
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "collective/transport/fault/fault_plan.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// What the transport underneath provides for the faults the wrapper cannot make by itself.
struct FaultHooks {
  /// KillRank: makes this rank dead to its peers. In process: InProcessHub::leave(rank) (peers
  /// waiting for it get PeerLost); in a multi-process test: _exit or SIGKILL (never returns).
  /// When it returns, the wrapper is dead: every later call throws Aborted, and fail() no longer
  /// reaches the group (a dead rank reports nothing; its peers must detect it).
  std::function<void()> kill_rank;
  /// Cut: breaks this rank's link to `peer` (InProcessHub::cut_link; over TCP, shutting the
  /// socket down), so the peer's next wait for this rank fails with PeerLost.
  std::function<void(int peer)> cut_link;
};

/// One rank's transport with faults injected (see the file comment).
class FaultInjectingTransport final : public Transport {
 public:
  /// Throws CollectiveError(InvalidConfig) when the plan needs a hook that is missing, or a rule
  /// sets neither or both of message and call.
  FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultPlan plan, FaultHooks hooks = {},
                          bool copying = false);
  /// In copying mode, waits (bounded by the last call's timeout) until peers consumed the copies
  /// still in flight, so a rank that leaves after its last call does not take them away.
  ~FaultInjectingTransport() override;

  Transport& inner() { return *inner_; }

  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  /// The inner transport's, except that a copying wrapper over an in-process one is Copying.
  TransportTraits traits() const override;
  void start_agree(const CallRecord& mine, const Deadline& deadline) override;
  void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                    const Deadline& deadline) override;
  void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
             const Deadline& deadline) override;
  void wait_send(int peer, const Deadline& deadline) override;
  void recv_with(int peer, std::uint64_t tag, std::size_t nbytes, const ConsumeFn& consume,
                 const Deadline& deadline) override;
  void recv_all_with(std::span<const int> peers, std::uint64_t tag,
                     std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                     const Deadline& deadline) override;
  void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                 const Deadline& deadline) override;
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override;
  void withdraw_sends() noexcept override { inner_->withdraw_sends(); }
  bool failed() const noexcept override { return inner_->failed(); }
  CollectiveError failure() const override { return inner_->failure(); }
  void begin_point_to_point(int peer, bool sending) noexcept override {
    inner_->begin_point_to_point(peer, sending);
  }
  void end_point_to_point() noexcept override { inner_->end_point_to_point(); }
  void observe_waits(bool on) noexcept override { inner_->observe_waits(on); }
  PeerWait longest_wait() const noexcept override { return inner_->longest_wait(); }

 private:
  /// Throws Aborted when this rank was killed.
  void check_alive() const;
  /// Sleeps `delay`, stopping early when the group fails or the deadline passes.
  void sleep_for(std::chrono::milliseconds delay, const Deadline& deadline) const;
  /// Applies a Cut of the link to `peer` (-1: every peer).
  void cut(int peer);
  /// Withdraws this rank's sends, runs the kill hook, marks the wrapper dead and throws Aborted.
  [[noreturn]] void die(const char* when, std::uint64_t k);

  std::unique_ptr<Transport> inner_;
  FaultPlan plan_;
  FaultHooks hooks_;
  bool copying_;
  std::vector<std::uint64_t> sent_;  // isend calls per peer (the plan's message numbers)
  std::vector<char> silent_;         // per peer: messages are no longer sent (Drop, Cut)
  std::vector<std::vector<unsigned char>> staging_;  // per peer: the copy in flight
  std::vector<unsigned char> receive_staging_;       // recv_all_by_copy's buffer
  std::uint64_t calls_ = 0;
  std::chrono::milliseconds last_timeout_{std::chrono::seconds(10)};
  std::atomic<bool> dead_{false};
};

}  // namespace ruccl
