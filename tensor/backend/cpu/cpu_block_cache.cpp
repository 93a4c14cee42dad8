// The CPU block cache (see cpu_block_cache.h): idle blocks by rounded size, the oldest freed first
// beyond kMaxIdleBytes, one mutex (only large allocations come here).
#include "tensor/backend/cpu/cpu_block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/checked_arithmetic.h"
#include "tensor/core/error.h"
#include "tensor/core/sanitizers.h"

#if RUCCL_ASAN
#include <sanitizer/asan_interface.h>
#define RUCCL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define RUCCL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define RUCCL_POISON(p, n) ((void)(p), (void)(n))
#define RUCCL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ruccl::cpu {

namespace {

constexpr std::size_t kPage = 4096;
// Blocks of at least one huge page (2 MiB on x86-64) are aligned to it, padded to whole huge pages
// and marked MADV_HUGEPAGE, so that Linux backs them with transparent huge pages when its THP mode
// is "madvise" (Debian's default) or "always": one page fault per 2 MiB instead of per 4 KiB, and
// fewer TLB misses. PyTorch does the same behind THP_MEM_ALLOC_ENABLE; here it is on unless
// RUCCL_CPU_HUGE_PAGES=0.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

bool huge_pages_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("RUCCL_CPU_HUGE_PAGES");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled;
}

/// The size a request is served with: whole huge pages from 2 MiB, whole pages below (so requests
/// of nearly equal size share blocks). 0 when that size does not fit size_t (no block can serve).
std::size_t rounded_size(std::size_t bytes) {
  const std::size_t unit = bytes >= kHugePage && huge_pages_enabled() ? kHugePage : kPage;
  std::size_t rounded = 0;
  return round_up_overflows(bytes, unit, rounded) ? 0 : rounded;
}

void* allocate_fresh(std::size_t bytes) {
  if (bytes >= kHugePage && huge_pages_enabled()) {
    void* p = std::aligned_alloc(kHugePage, bytes);
#ifdef MADV_HUGEPAGE
    if (p != nullptr) (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return p;
  }
  return std::aligned_alloc(kPage, bytes);
}

class BlockCache {
 public:
  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache();  // never destroyed: tensors may outlive main
    return *cache;
  }

  void* acquire(std::size_t bytes) {
    const std::size_t size = rounded_size(bytes);
    if (size == 0) return nullptr;  // larger than any block can be
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = idle_.find(size);
      if (it != idle_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        idle_bytes_ -= size;
        order_.erase(std::find(order_.begin(), order_.end(), p));
        RUCCL_UNPOISON(p, size);
        return p;
      }
    }
    void* p = allocate_fresh(size);
    if (p == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = size;
    return p;
  }

  void release(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t size = sizes_.at(p);
    RUCCL_POISON(p, size);
    idle_[size].push_back(p);
    order_.push_back(p);
    idle_bytes_ += size;
    while (idle_bytes_ > kMaxIdleBytes) free_oldest();
  }

  std::size_t idle_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return idle_bytes_;
  }

  void free_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!order_.empty()) free_oldest();
  }

 private:
  // Requires mutex_ and at least one idle block.
  void free_oldest() {
    void* oldest = order_.front();
    order_.pop_front();
    const std::size_t size = sizes_.at(oldest);
    std::vector<void*>& same = idle_[size];
    same.erase(std::find(same.begin(), same.end(), oldest));
    idle_bytes_ -= size;
    sizes_.erase(oldest);
    RUCCL_UNPOISON(oldest, size);
    std::free(oldest);
  }

  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;    // every block the cache made, live or idle
  std::map<std::size_t, std::vector<void*>> idle_;  // idle blocks by size
  std::deque<void*> order_;                         // idle blocks, oldest first
  std::size_t idle_bytes_ = 0;
};

}  // namespace

void* acquire_block(std::size_t bytes) {
  RUCCL_ASSERT(bytes >= kMinCachedBytes);
  return BlockCache::instance().acquire(bytes);
}

void release_block(void* p) { BlockCache::instance().release(p); }

std::size_t cached_bytes() { return BlockCache::instance().idle_bytes(); }

void empty_cache() { BlockCache::instance().free_idle(); }

}  // namespace ruccl::cpu
