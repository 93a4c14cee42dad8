#pragma once
// Large CPU blocks, reused (cpu_block_cache.cpp). A fresh large block pays for its pages on first
// touch: on this project's VMs 10-40 us per 4 KiB page fault, and the kernel zeroes every fresh
// 2 MiB huge page - more than the op that fills the block costs (a fresh 64 MiB a + b ran at 0.64x
// memcpy bandwidth, into a reused output at 0.82x). So blocks of kMinCachedBytes and more go back
// to a process-wide cache when their last tensor dies, and the next allocation of the same rounded
// size takes one. The cache keeps at most kMaxIdleBytes idle (the oldest are freed first);
// cpu::empty_cache() frees them all. Blocks of 2 MiB and more are aligned to 2 MiB and marked
// MADV_HUGEPAGE (RUCCL_CPU_HUGE_PAGES=0 turns that off). Under AddressSanitizer an idle block is
// poisoned, so a use after free is still reported.
#include <cstddef>

namespace ruccl::cpu {

/// Allocations from this size on go through the cache.
inline constexpr std::size_t kMinCachedBytes = std::size_t{256} << 10;
/// The most idle bytes the cache keeps.
inline constexpr std::size_t kMaxIdleBytes = std::size_t{512} << 20;

/// A block of at least `bytes` (>= kMinCachedBytes), 64-byte aligned; an idle cached block of the
/// same rounded size when there is one. nullptr when out of memory.
void* acquire_block(std::size_t bytes);
/// Gives a block from acquire_block back to the cache (the Storage deleter of cached blocks).
void release_block(void* p);

}  // namespace ruccl::cpu
