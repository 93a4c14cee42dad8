#include "collective/trace/call_stats.h"

#include <iomanip>
#include <sstream>

namespace ruccl {

namespace {

std::string op_name(int op) {
  if (op == CollectiveStats::kSend) return "send";
  if (op == CollectiveStats::kRecv) return "recv";
  const auto kind = static_cast<OpKind>(op);
  // broadcast_from_sender prints as "broadcast" in messages; its stats row keeps them apart.
  return kind == OpKind::BroadcastFromSender ? "broadcast_from_sender" : op_kind_name(kind);
}

}  // namespace

std::vector<CollectiveStatsRow> CollectiveStats::rows() const {
  std::vector<CollectiveStatsRow> out;
  for (int op = 0; op < kOps; ++op) {
    for (int a = 0; a < kAlgorithms; ++a) {
      const Slot& s = slots_[static_cast<std::size_t>(op)][static_cast<std::size_t>(a)];
      if (s.calls == 0) continue;
      const bool p2p = op == kSend || op == kRecv;
      out.push_back(CollectiveStatsRow{
          op_name(op), p2p ? "" : algorithm_name(static_cast<Algorithm>(a)), s.calls, s.failed,
          s.bytes, static_cast<double>(s.ns) / 1e9, static_cast<double>(s.max_ns) / 1e9});
    }
  }
  return out;
}

std::uint64_t CollectiveStats::total_calls() const {
  std::uint64_t n = 0;
  for (const auto& per_op : slots_) {
    for (const Slot& s : per_op) n += s.calls;
  }
  return n;
}

std::string CollectiveStats::to_string() const {
  std::ostringstream out;
  out << std::left << std::setw(22) << "op" << std::setw(12) << "algorithm" << std::right
      << std::setw(9) << "calls" << std::setw(7) << "failed" << std::setw(15) << "bytes"
      << std::setw(11) << "total_ms" << std::setw(10) << "mean_us" << std::setw(10) << "max_us"
      << "\n";
  for (const CollectiveStatsRow& r : rows()) {
    out << std::left << std::setw(22) << r.op << std::setw(12)
        << (r.algorithm.empty() ? "-" : r.algorithm) << std::right << std::setw(9) << r.calls
        << std::setw(7) << r.failed << std::setw(15) << r.bytes << std::fixed
        << std::setprecision(3) << std::setw(11) << r.seconds * 1e3 << std::setprecision(1)
        << std::setw(10) << r.seconds * 1e6 / static_cast<double>(r.calls) << std::setw(10)
        << r.max_seconds * 1e6 << "\n";
  }
  return out.str();
}

}  // namespace ruccl
