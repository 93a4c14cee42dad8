#pragma once
// Deadline: the point in time a blocking wait gives up.
#include <chrono>

namespace ruccl {

/// An absolute steady-clock deadline. Every blocking wait in the collective layer takes one.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// The deadline `timeout` from now.
  static Deadline after(std::chrono::milliseconds timeout) { return Deadline(Clock::now() + timeout, timeout); }

  Clock::time_point at() const { return at_; }
  /// The timeout this deadline was made from (for error messages).
  std::chrono::milliseconds timeout() const { return timeout_; }
  bool expired(Clock::time_point now = Clock::now()) const { return now >= at_; }

 private:
  Deadline(Clock::time_point at, std::chrono::milliseconds timeout) : at_(at), timeout_(timeout) {}
  Clock::time_point at_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ruccl
