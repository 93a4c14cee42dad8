#pragma once
// HostBlockPool: the bookkeeping of the pinned (page-locked) host buffer cache, in plain C++ over
// the RawMemory primitives (cudaHostAlloc/cudaFreeHost in cuda/memory/pinned_pool.cpp, a fake in
// the tests). As PyTorch's CachingHostAllocator: sizes round up to a power of two (at least one
// 4 KiB page), a freed buffer is reused for a request of the same size class, and a buffer that
// copies on some streams used (record_stream) is reused only once events recorded on those
// streams at its free have completed. Host buffers are not split: staging sizes repeat, and a
// power-of-two class wastes at most half. Thread-safe.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/memory/memory_stats.h"
#include "cuda/memory/pending_frees.h"
#include "cuda/memory/raw_memory.h"

namespace ruccl::cuda {

class HostBlockPool {
 public:
  /// The smallest size class: one page.
  static constexpr std::size_t kMinBufferSize = 4096;

  explicit HostBlockPool(std::unique_ptr<RawMemory> raw);
  /// Gives the cached buffers back (waiting for pending events first).
  ~HostBlockPool();
  HostBlockPool(const HostBlockPool&) = delete;
  HostBlockPool& operator=(const HostBlockPool&) = delete;

  /// A buffer of at least `nbytes` bytes (nullptr for 0). OutOfMemoryError when the system cannot
  /// pin that much even after the cache is given back.
  void* allocate(std::size_t nbytes);
  /// Gives a buffer back: reusable at once, or after the recorded streams' events complete.
  /// InternalError for a pointer this pool did not hand out (or already freed).
  void free(void* ptr);
  /// Notes that copies on `stream` use the buffer at `ptr`. ValueError for a pointer not handed
  /// out.
  void record_stream(void* ptr, StreamId stream);
  /// Gives every free cached buffer back, after waiting for pending events.
  void empty_cache();

  MemoryStats stats() const;
  void reset_peak_stats();
  /// The size class of the handed-out buffer at `ptr` (ValueError if none).
  std::size_t buffer_size(const void* ptr) const;
  /// Buffers freed by their callers that wait for events.
  std::size_t pending_buffers() const;

  /// The size class of a request: the next power of two, at least kMinBufferSize.
  static std::size_t size_class(std::size_t nbytes);

 private:
  struct Buffer {
    void* ptr = nullptr;
    std::size_t size = 0;
    std::size_t requested = 0;
    int pending_events = 0;
    std::vector<StreamId> stream_uses;
  };

  void release_cached();
  void to_free_list(Buffer* buffer);
  Buffer* handed_out(const void* ptr, const char* op) const;

  std::unique_ptr<RawMemory> raw_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<Buffer*>> free_;  // by size class
  std::unordered_map<const void*, Buffer*> allocated_;
  PendingFrees<Buffer> pending_;
  /// Buffers freed whose events could not be recorded: never reused, deleted at the end.
  std::vector<Buffer*> never_reused_;
  MemoryStats stats_;
};

}  // namespace ruccl::cuda
