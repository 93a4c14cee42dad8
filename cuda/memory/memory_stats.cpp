#include "cuda/memory/memory_stats.h"

#include <array>
#include <cstdio>

namespace ruccl::cuda {

std::string format_bytes(std::size_t bytes) {
  constexpr std::array<const char*, 5> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.2f %s", value, kUnits[unit]);
  return text.data();
}

}  // namespace ruccl::cuda
