#pragma once
// FaultPlan: which faults one rank injects, and when. Plain data, independent of any transport:
// the fault-injecting Transport wrapper (fault_injecting_transport.h) applies a plan at the
// Transport level, and a network transport may apply the same plan to its wire (where a Corrupt
// is caught by the frame CRC instead of arriving as a wrong input).
//
//   FaultPlan plan;
//   plan.add(FaultRule::on_message(FaultAction::Drop, /*peer=*/1, /*k=*/0));   // first isend to 1
//   plan.add(FaultRule::on_call(FaultAction::KillRank, /*k=*/3));              // 4th agree()
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ruccl {

/// What a rule does when it fires.
enum class FaultAction : std::uint8_t {
  Delay,      ///< waits `delay` before sending the message (or entering the call)
  Drop,       ///< the message and every later one to that peer are never sent (a silent link)
  Duplicate,  ///< the message is sent twice
  Corrupt,    ///< the message is sent with byte `byte_offset` XORed with `xor_mask`
  Cut,        ///< this rank's link to the peer (every peer when peer is -1) breaks
  KillRank,   ///< this rank dies (the wrapper's kill hook: in process it leaves the group, in a
              ///< multi-process test it is _exit / SIGKILL)
};

/// "delay", "drop", "duplicate", "corrupt", "cut", "kill_rank".
inline const char* fault_action_name(FaultAction action) {
  switch (action) {
    case FaultAction::Delay:
      return "delay";
    case FaultAction::Drop:
      return "drop";
    case FaultAction::Duplicate:
      return "duplicate";
    case FaultAction::Corrupt:
      return "corrupt";
    case FaultAction::Cut:
      return "cut";
    case FaultAction::KillRank:
      return "kill_rank";
  }
  return "?";
}

/// One fault. It fires on this rank's message number `message` to `peer` (the k-th isend to that
/// peer, counting from 0; peer -1: to any peer, each peer counted on its own), or on this rank's
/// call number `call` (the k-th agree(), counting from 0: the start of a collective). Exactly one
/// of message and call is set. Message faults: every action. Call faults: Delay, Cut (the links to
/// `peer`, or to every peer), KillRank.
struct FaultRule {
  FaultAction action = FaultAction::Delay;
  int peer = -1;
  std::optional<std::uint64_t> message;
  std::optional<std::uint64_t> call;
  std::chrono::milliseconds delay{0};  ///< Delay
  std::size_t byte_offset = 0;         ///< Corrupt: the payload byte (must be inside the message)
  std::uint8_t xor_mask = 0x01;        ///< Corrupt: the bits flipped

  static FaultRule on_message(FaultAction action, int peer, std::uint64_t k) {
    FaultRule rule;
    rule.action = action;
    rule.peer = peer;
    rule.message = k;
    return rule;
  }
  static FaultRule on_call(FaultAction action, std::uint64_t k, int peer = -1) {
    FaultRule rule;
    rule.action = action;
    rule.peer = peer;
    rule.call = k;
    return rule;
  }
  FaultRule& with_delay(std::chrono::milliseconds d) {
    delay = d;
    return *this;
  }
  FaultRule& with_corruption(std::size_t offset, std::uint8_t mask = 0x01) {
    byte_offset = offset;
    xor_mask = mask;
    return *this;
  }
};

/// The faults of one rank, in the order they were added; the first rule that matches fires.
struct FaultPlan {
  std::vector<FaultRule> rules;

  FaultPlan& add(const FaultRule& rule) {
    rules.push_back(rule);
    return *this;
  }
  bool empty() const { return rules.empty(); }
  /// The rule for message k to `peer`, or nullptr.
  const FaultRule* for_message(int peer, std::uint64_t k) const {
    for (const FaultRule& rule : rules) {
      if (rule.message == k && (rule.peer < 0 || rule.peer == peer)) return &rule;
    }
    return nullptr;
  }
  /// The rule for call k, or nullptr.
  const FaultRule* for_call(std::uint64_t k) const {
    for (const FaultRule& rule : rules) {
      if (rule.call == k) return &rule;
    }
    return nullptr;
  }
};

}  // namespace ruccl
