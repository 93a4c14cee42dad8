#pragma once
// WireFaultPath: a decorator of the TCP peer path (tcp/tcp_path.h) that injects a rank's wire
// faults (TcpTransportOptions::wire_faults, a FaultPlan) below the framing, so the receiver's
// checks are what is tested: message k to the peer (the k-th isend) is delayed, dropped (its
// frames never written, their sequence numbers used up: the receiver sees a gap, or its
// deadline), duplicated, corrupted (a payload failing its CRC) or cut (the data connection shut
// down), or kills the rank; call k (the k-th agreement) is delayed, cuts the connection or kills
// the rank. The process transport puts it on every TCP path of a rank with a plan (and then
// chooses no shared memory: these are faults of the wire).
#include <functional>
#include <memory>

#include "collective/transport/fault/fault_plan.h"
#include "collective/transport/tcp/tcp_path.h"

namespace ruccl {

/// What the wire-fault paths of one rank share: the plan, the kill, and the call faults that
/// act once per call for the whole rank (Delay, KillRank).
class WireFaults {
 public:
  /// `kill`: KillRank's action (null: SIGKILL of this process).
  WireFaults(FaultPlan plan, std::function<void()> kill)
      : plan_(std::move(plan)), kill_(std::move(kill)) {}
  const FaultPlan& plan() const { return plan_; }
  /// Runs call k's rule for the whole rank (its delay, its kill), the first time a path asks.
  void start_call(std::uint64_t k, const FaultRule& rule);
  void kill();

 private:
  FaultPlan plan_;
  std::function<void()> kill_;
  std::uint64_t next_call_ = 0;  // the first call whose rank-wide action has not run
};

class WireFaultPath final : public PeerPath {
 public:
  WireFaultPath(std::unique_ptr<TcpPath> inner, std::shared_ptr<WireFaults> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}

  LinkKind link() const noexcept override { return inner_->link(); }
  /// Applies call k's fault first (each call queues its record to every peer once).
  void queue_record(std::uint64_t seq, std::span<const std::uint8_t> encoded) override;
  bool borrows() const noexcept override { return inner_->borrows(); }
  /// Applies the fault of this message, if any.
  PathStep post_send(std::uint64_t tag, const void* data, std::size_t nbytes) override;
  PathStep progress_sends() override { return inner_->progress_sends(); }
  void drop_sends() noexcept override { inner_->drop_sends(); }
  PathStep advance(PathReceive& r) override { return inner_->advance(r); }
  std::uint64_t bytes_moved() const noexcept override { return inner_->bytes_moved(); }
  void arm(PollSet& set, bool reading) override { inner_->arm(set, reading); }
  CollectiveError malformed(const std::string& why) const override {
    return inner_->malformed(why);
  }

 private:
  /// Shuts the data connection down (the peer's next wait for this rank fails with PeerLost).
  void cut() noexcept;

  std::unique_ptr<TcpPath> inner_;
  std::shared_ptr<WireFaults> faults_;
  std::uint64_t messages_ = 0;  // isends to the peer so far
  std::uint64_t calls_ = 0;     // records queued so far (one per call)
  bool dropping_ = false;       // a Drop fired: every later message vanishes
};

}  // namespace ruccl
