#include "collective/protocol/hang_report.h"

#include <algorithm>
#include <vector>

#include "tensor/core/error.h"

namespace ruccl {

std::string describe_calls_reached(std::span<const std::uint64_t> reached, std::uint64_t seq,
                                   const RankNames& names) {
  std::vector<std::uint64_t> numbers(reached.begin(), reached.end());
  std::sort(numbers.begin(), numbers.end(), std::greater<>());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::string out = "calls reached: ";
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    std::vector<int> ranks;
    for (std::size_t r = 0; r < reached.size(); ++r) {
      if (reached[r] == numbers[i]) ranks.push_back(static_cast<int>(r));
    }
    if (i > 0) out += ", ";
    out += numbers[i] == kCallNotSeen ? str(names.list(ranks), " at none")
                                      : str(names.list(ranks), " at #", numbers[i]);
  }
  std::vector<int> missing;
  for (std::size_t r = 0; r < reached.size(); ++r) {
    if (reached[r] < seq) missing.push_back(static_cast<int>(r));
  }
  if (!missing.empty()) out += str(" (missing from #", seq, ": ", names.list(missing), ")");
  return out;
}

std::string calls_reached_from_records(std::span<const std::uint64_t> seen,
                                       std::uint64_t agreeing_seq, std::span<const int> absent,
                                       std::uint64_t seq, const RankNames& names) {
  if (seq == 0) return "";  // point-to-point: no call numbers
  std::vector<std::uint64_t> reached(seen.begin(), seen.end());
  if (agreeing_seq == seq) {
    for (std::size_t p = 0; p < reached.size(); ++p) {
      if (std::find(absent.begin(), absent.end(), static_cast<int>(p)) == absent.end()) {
        reached[p] = seq;
      }
    }
  }
  return "; " + describe_calls_reached(reached, seq, names);
}

}  // namespace ruccl
