#pragma once
// WaitStats: the peer a rank waited on longest during one call (the trace's "waited on"), kept by
// the transports that can tell (in process, the process transport) and read through
// Transport::observe_waits / longest_wait.
#include <cstdint>

namespace ruccl {

/// The peer this rank waited on longest, and how long; peer -1: none (no wait, or a transport
/// that cannot tell).
struct PeerWait {
  int peer = -1;
  std::int64_t ns = 0;
};

class WaitStats {
 public:
  /// Starts (and resets) or stops noting waits; off by default, so waits cost nothing extra.
  void observe(bool on) noexcept {
    observing_ = on;
    longest_ = PeerWait{};
  }
  bool observing() const noexcept { return observing_; }
  /// A wait loop's end: this rank waited `ns` for `peer` (the last one it waited for).
  void note(int peer, std::int64_t ns) noexcept {
    if (peer >= 0 && ns > longest_.ns) longest_ = PeerWait{peer, ns};
  }
  PeerWait longest() const noexcept { return longest_; }

 private:
  bool observing_ = false;
  PeerWait longest_;
};

}  // namespace ruccl
