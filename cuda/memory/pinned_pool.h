#pragma once
// Pinned (page-locked) host buffers for host-staged transfers (GPU tensors over TCP or MPI, and
// Tensor::to between host and device): cudaMemcpyAsync from or to pinned memory is truly
// asynchronous and runs at full PCIe/NVLink-C2C speed. cudaHostAlloc is slow, so buffers are
// cached (bookkeeping in cuda/memory/host_block_pool.h).
//
//   ruccl::cuda::PinnedBuffer staging = ruccl::cuda::allocate_pinned(nbytes);
//   RUCCL_CUDA_CHECK(cudaMemcpyAsync(staging.data(), device_ptr, nbytes,
//                                    cudaMemcpyDeviceToHost, stream));
//   staging.record_stream(stream);  // not reused before the copy is done
//   ... synchronise, send staging.data() ...
//   // ~PinnedBuffer: back to the cache
#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/memory/memory_stats.h"

namespace ruccl::cuda {

/// A pinned host buffer from the cache; given back when destroyed. Movable, not copyable. An
/// empty buffer (default-constructed, moved from, or of 0 bytes) has data() == nullptr.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// The buffer (nullptr when empty).
  void* data() const { return data_; }
  /// The bytes asked for.
  std::size_t size() const { return size_; }
  /// Whether it holds memory.
  explicit operator bool() const { return data_ != nullptr; }

  /// Notes that work queued on `stream` (copies) uses the buffer: once given back, it is not
  /// reused before that work is done. Call it for every stream that touches the buffer.
  void record_stream(cudaStream_t stream);
  /// Gives the buffer back now; the object is then empty.
  void reset();

 private:
  friend PinnedBuffer allocate_pinned(std::size_t nbytes);
  PinnedBuffer(void* data, std::size_t size) : data_(data), size_(size) {}

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A pinned buffer of at least `nbytes` bytes (portable: usable with every device). Throws
/// DeviceError on a machine without a usable GPU, OutOfMemoryError when the system cannot pin that
/// much even after the cache is given back.
PinnedBuffer allocate_pinned(std::size_t nbytes);

/// Gives every cached free pinned buffer back (cudaFreeHost), after waiting for pending events.
void empty_pinned_cache();

/// The pinned pool's counters (zero before its first allocation).
MemoryStats pinned_memory_stats();

/// Sets the pinned pool's peak counters to the current values.
void reset_pinned_peak_stats();

}  // namespace ruccl::cuda
