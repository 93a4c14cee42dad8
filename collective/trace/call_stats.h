#pragma once
// CollectiveStats: what a communicator's calls added up to, per operation and algorithm: calls,
// bytes, time (total and longest) and failures. Always counted: a call adds to one fixed slot
// (no allocation, no lock), which costs a few nanoseconds beside the clock reads it shares with
// the trace. Read with Communicator::stats(), from the rank's thread like every other method.
//
//   for (const CollectiveStatsRow& row : comm.stats().rows()) ...
//   std::cout << comm.stats().to_string();   // a table
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collective/protocol/call_options.h"
#include "collective/protocol/call_record.h"

namespace ruccl {

/// One operation on one algorithm.
struct CollectiveStatsRow {
  std::string op;         ///< "all_reduce", ..., "send", "recv"
  std::string algorithm;  ///< "direct", "ring", ...; "" for calls with no algorithm (send, recv)
  std::uint64_t calls = 0;
  std::uint64_t failed = 0;  ///< calls that threw
  std::uint64_t bytes = 0;   ///< this rank's tensor bytes, summed over the calls
  double seconds = 0.0;      ///< time in the calls, summed
  double max_seconds = 0.0;  ///< the longest call
};

class CollectiveStats {
 public:
  /// Slots beyond the collectives' OpKinds.
  static constexpr int kSend = static_cast<int>(OpKind::AllToAllV) + 1;
  static constexpr int kRecv = kSend + 1;
  static constexpr int kOps = kRecv + 1;
  static constexpr int kAlgorithms = static_cast<int>(Algorithm::HalvingDoubling) + 1;

  /// Adds one call of operation `op` (an OpKind, kSend or kRecv) on `algorithm` (an Algorithm's
  /// value; anything else counts as Auto).
  void add(int op, std::uint8_t algorithm, std::uint64_t bytes, std::int64_t ns, bool ok) noexcept {
    if (op < 0 || op >= kOps) return;
    Slot& s = slots_[static_cast<std::size_t>(op)][algorithm < kAlgorithms ? algorithm : 0];
    ++s.calls;
    s.failed += ok ? 0 : 1;
    s.bytes += bytes;
    s.ns += ns;
    if (ns > s.max_ns) s.max_ns = ns;
  }
  /// The rows with at least one call, by operation (OpKind order, then send, recv) and algorithm.
  std::vector<CollectiveStatsRow> rows() const;
  /// Calls of every operation (failed ones included).
  std::uint64_t total_calls() const;
  /// A table: one line per row, "op algorithm calls failed bytes total_ms mean_us max_us".
  std::string to_string() const;

 private:
  struct Slot {
    std::uint64_t calls = 0;
    std::uint64_t failed = 0;
    std::uint64_t bytes = 0;
    std::int64_t ns = 0;
    std::int64_t max_ns = 0;
  };
  std::array<std::array<Slot, kAlgorithms>, kOps> slots_{};
};

}  // namespace ruccl
