// Bytes and statistics for people (cuda/memory/memory_stats.h).
#include "cuda/memory/memory_stats.h"

#include <catch2/catch.hpp>

TEST_CASE("format_bytes writes bytes below 1 KiB as they are and binary units with two decimals",
          "[cuda_host]") {
  using ruccl::cuda::format_bytes;
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.00 KiB");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(std::size_t{15} << 20) == "15.00 MiB");
  CHECK(format_bytes(std::size_t{3} << 30) == "3.00 GiB");
  CHECK(format_bytes(std::size_t{1} << 50) == "1.00 PiB");
  CHECK(format_bytes(std::size_t{1} << 62) == "4096.00 PiB");  // no unit above PiB
}

TEST_CASE("memory statistics print as one line with every counter", "[cuda_host]") {
  ruccl::cuda::MemoryStats stats;
  stats.allocated_bytes = 1 << 20;
  stats.peak_allocated_bytes = 4 << 20;
  stats.reserved_bytes = 22 << 20;
  stats.peak_reserved_bytes = 22 << 20;
  stats.segments = 2;
  stats.num_allocations = 3;
  stats.num_cache_hits = 1;
  stats.num_device_allocs = 2;
  stats.num_alloc_retries = 1;
  CHECK(ruccl::cuda::to_string(stats) ==
        "allocated 1.00 MiB (peak 4.00 MiB), reserved 22.00 MiB (peak 22.00 MiB) in 2 segments; 3 "
        "allocations, 1 from the cache, 2 device allocations, 0 device frees, 1 retries, 0 out of "
        "memory");
  CHECK(stats.cached_bytes() == std::size_t{21} << 20);
}
