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

std::string to_string(const MemoryStats& stats) {
  return "allocated " + format_bytes(stats.allocated_bytes) + " (peak " +
         format_bytes(stats.peak_allocated_bytes) + "), reserved " +
         format_bytes(stats.reserved_bytes) + " (peak " + format_bytes(stats.peak_reserved_bytes) +
         ") in " + std::to_string(stats.segments) + " segments; " +
         std::to_string(stats.num_allocations) + " allocations, " +
         std::to_string(stats.num_cache_hits) + " from the cache, " +
         std::to_string(stats.num_device_allocs) + " device allocations, " +
         std::to_string(stats.num_device_frees) + " device frees, " +
         std::to_string(stats.num_alloc_retries) + " retries, " + std::to_string(stats.num_ooms) +
         " out of memory";
}

}  // namespace ruccl::cuda
