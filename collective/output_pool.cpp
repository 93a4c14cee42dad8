#include "collective/output_pool.h"

#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

namespace ruccl {

namespace {

constexpr std::size_t kMinPooledBytes = std::size_t{256} << 10;
constexpr std::size_t kMaxIdleBytes = std::size_t{512} << 20;
constexpr std::size_t kAlignment = 64;

class BlockCache {
 public:
  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache();  // never destroyed: tensors may outlive main
    return *cache;
  }

  void* acquire(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = idle_.find(bytes);
      if (it != idle_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        idle_bytes_ -= bytes;
        std::erase(order_, p);
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlignment, bytes);
    RUCCL_CHECK(p != nullptr, ValueError, "collective output: out of memory for ", bytes, " bytes");
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
    return p;
  }

  void release(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t bytes = sizes_.at(p);
    idle_[bytes].push_back(p);
    order_.push_back(p);
    idle_bytes_ += bytes;
    while (idle_bytes_ > kMaxIdleBytes && !order_.empty()) {
      void* oldest = order_.front();
      order_.pop_front();
      const std::size_t n = sizes_.at(oldest);
      std::erase(idle_[n], oldest);
      idle_bytes_ -= n;
      sizes_.erase(oldest);
      std::free(oldest);
    }
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;    // every block the cache made, live or idle
  std::map<std::size_t, std::vector<void*>> idle_;  // idle blocks by size
  std::deque<void*> order_;                         // idle blocks, oldest first
  std::size_t idle_bytes_ = 0;
};

void release_block(void* p) { BlockCache::instance().release(p); }

}  // namespace

Tensor pooled_empty(const Shape& shape, DType dtype) {
  const std::size_t nbytes = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  if (nbytes < kMinPooledBytes) return Tensor::empty(shape, dtype);
  // Round to whole pages so outputs of nearly equal size share blocks.
  const std::size_t bytes = (nbytes + 4095) / 4096 * 4096;
  void* p = BlockCache::instance().acquire(bytes);
  auto storage = std::make_shared<Storage>(p, bytes, Device::cpu(), &release_block);
  return Tensor(std::move(storage), shape, shape.contiguous_strides(), 0, dtype);
}

}  // namespace ruccl
