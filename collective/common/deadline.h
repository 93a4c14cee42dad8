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
};

}  // namespace ruccl
