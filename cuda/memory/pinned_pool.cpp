#include "cuda/memory/pinned_pool.h"

#include <exception>
#include <mutex>
#include <utility>

#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"
#include "cuda/core/stream.h"
#include "cuda/memory/event_pool.h"
#include "cuda/memory/host_block_pool.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {
namespace {

/// cudaHostAlloc/cudaFreeHost, and events on whichever device a stream belongs to.
class CudaPinnedMemory final : public RawMemory {
 public:
  void* allocate(std::size_t nbytes) override {
    void* ptr = nullptr;
    // Portable: pinned for every device's context, not only the current one.
    const cudaError_t status = cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // an answer: the pool gives its cache back and retries
      return nullptr;
    }
    RUCCL_CUDA_CHECK(status);
    return ptr;
  }
  void deallocate(void* ptr, std::size_t /*nbytes*/) override {
    RUCCL_CUDA_CHECK(cudaFreeHost(ptr));
  }
  EventId record_event(StreamId stream) override {
    const auto handle = reinterpret_cast<cudaStream_t>(stream);
    return record_pooled_event(stream_device(handle), handle);
  }
  bool event_ready(EventId event) override { return pooled_event_ready(event); }
  void synchronize_event(EventId event) override { synchronize_pooled_event(event); }
  void release_event(EventId event) override { release_pooled_event(event); }
};

/// The process's pinned pool (never destroyed: buffers in static objects may outlive it), and the
/// error a destructor could not throw, rethrown by the next allocate_pinned.
struct PinnedPool {
  HostBlockPool buffers{std::make_unique<CudaPinnedMemory>()};
  std::mutex deferred_mutex;
  std::exception_ptr deferred_error;
};

PinnedPool& pinned_pool() {
  static PinnedPool* const pool = new PinnedPool;
  return *pool;
}

}  // namespace

PinnedBuffer::~PinnedBuffer() { reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PinnedBuffer::record_stream(cudaStream_t stream) {
  if (data_ != nullptr) {
    pinned_pool().buffers.record_stream(data_, reinterpret_cast<StreamId>(stream));
  }
}

void PinnedBuffer::reset() {
  if (data_ == nullptr) {
    return;
  }
  void* data = std::exchange(data_, nullptr);
  size_ = 0;
  PinnedPool& pool = pinned_pool();
  try {
    pool.buffers.free(data);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(pool.deferred_mutex);
    if (!pool.deferred_error) {
      pool.deferred_error = std::current_exception();
    }
  }
}

PinnedBuffer allocate_pinned(std::size_t nbytes) {
  check_device("allocate_pinned", 0);  // pinned memory needs a CUDA context
  PinnedPool& pool = pinned_pool();
  std::exception_ptr deferred;
  {
    const std::lock_guard<std::mutex> lock(pool.deferred_mutex);
    deferred = std::exchange(pool.deferred_error, nullptr);
  }
  if (deferred) {
    std::rethrow_exception(deferred);
  }
  return {pool.buffers.allocate(nbytes), nbytes};
}

void empty_pinned_cache() {
  if (cached_device_count() > 0) {
    pinned_pool().buffers.empty_cache();
  }
}

MemoryStats pinned_memory_stats() {
  return cached_device_count() > 0 ? pinned_pool().buffers.stats() : MemoryStats{};
}

void reset_pinned_peak_stats() {
  if (cached_device_count() > 0) {
    pinned_pool().buffers.reset_peak_stats();
  }
}

}  // namespace ruccl::cuda
