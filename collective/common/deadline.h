#pragma once
// Deadline: the point in time a blocking wait gives up.
#include <chrono>
#include <cstdint>
#include <string>

namespace ruccl {

/// An absolute steady-clock deadline. Every blocking wait in the collective layer takes one.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// The deadline `timeout` after `from` (now by default). `label` and `seq` name the call in
  /// timeout messages. An asynchronous collective's deadline counts from the *_async call.
  static Deadline after(std::chrono::milliseconds timeout, const char* label = "wait",
                        std::uint64_t seq = 0, Clock::time_point from = Clock::now()) {
    return Deadline(from + timeout, timeout, label, seq);
  }

  Clock::time_point at() const { return at_; }
  /// The timeout this deadline was made from (for error messages).
  std::chrono::milliseconds timeout() const { return timeout_; }
  bool expired(Clock::time_point now = Clock::now()) const { return now >= at_; }
  /// The call this deadline belongs to ("all_reduce"), for error messages.
  const char* label() const { return label_; }
  /// The call's sequence number (0 for point-to-point calls).
  std::uint64_t seq() const { return seq_; }
  /// The call number the waiting transport's own records carry: seq() for a call of that
  /// transport, 0 when the call belongs to a group whose waits run on its parent's transport (the
  /// parent's hang report counts the parent's calls, not the group's; the message still names the
  /// group's call through call_name()).
  std::uint64_t transport_seq() const { return on_parent_ ? 0 : seq_; }
  /// This deadline, waited on the parent transport of a group (transport_seq() becomes 0).
  Deadline on_parent() const {
    Deadline d = *this;
    d.on_parent_ = true;
    return d;
  }
  /// How error messages name the call: "all_reduce (call #7)" for a collective, the label alone
  /// for a point-to-point call.
  std::string call_name() const {
    std::string name(label_);
    if (seq_ > 0) name += " (call #" + std::to_string(seq_) + ")";
    return name;
  }

 private:
  Deadline(Clock::time_point at, std::chrono::milliseconds timeout, const char* label,
           std::uint64_t seq)
      : at_(at), timeout_(timeout), label_(label), seq_(seq) {}
  Clock::time_point at_;
  std::chrono::milliseconds timeout_;
  const char* label_;
  std::uint64_t seq_;
  bool on_parent_ = false;
};

}  // namespace ruccl
