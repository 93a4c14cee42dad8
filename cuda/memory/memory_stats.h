#pragma once
// What a caching allocator reports about itself (PyTorch's torch.cuda.memory_stats, reduced to the
// numbers people act on). No CUDA header: host-only code may read it.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ruccl::cuda {

/// Counters of one caching allocator (one device, or the pinned host pool). Bytes are block sizes
/// after rounding unless the name says requested.
struct MemoryStats {
  std::size_t allocated_bytes = 0;       ///< in blocks handed out and not yet freed
  std::size_t requested_bytes = 0;       ///< what callers asked for, of those blocks
  std::size_t reserved_bytes = 0;        ///< obtained from the device (allocated + cached)
  std::size_t peak_allocated_bytes = 0;  ///< highest allocated_bytes since the last reset
  std::size_t peak_reserved_bytes = 0;   ///< highest reserved_bytes since the last reset
  std::size_t active_blocks = 0;         ///< blocks handed out and not yet freed
  std::size_t segments = 0;              ///< device allocations held (each holds >= 1 block)
  std::uint64_t num_allocations = 0;     ///< allocations served (0-byte requests not counted)
  std::uint64_t num_frees = 0;           ///< blocks given back by callers
  std::uint64_t num_cache_hits = 0;      ///< allocations served from the cache, no device call
  std::uint64_t num_device_allocs = 0;   ///< successful cudaMalloc (cudaHostAlloc) calls
  std::uint64_t num_device_frees = 0;    ///< cudaFree (cudaFreeHost) calls
  std::uint64_t num_alloc_retries = 0;   ///< device allocations that failed, cache freed, retried
  std::uint64_t num_ooms = 0;            ///< out-of-memory errors thrown

  /// Reserved bytes not in use: what empty_cache() can give back (when whole segments are free).
  std::size_t cached_bytes() const { return reserved_bytes - allocated_bytes; }
};

/// "512 B", "1.50 MiB", "20.00 GiB": bytes for people (binary units, two decimals above bytes).
std::string format_bytes(std::size_t bytes);

/// One line for logs and benchmark reports: "allocated 1.00 MiB (peak 4.00 MiB), reserved
/// 22.00 MiB (peak 22.00 MiB) in 2 segments; 3 allocations, 1 from the cache, 2 device
/// allocations, 0 device frees, 0 retries, 0 out of memory".
std::string to_string(const MemoryStats& stats);

}  // namespace ruccl::cuda
