#include "cuda/memory/caching_allocator.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <vector>

#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"
#include "cuda/core/stream.h"
#include "cuda/memory/block_allocator.h"
#include "cuda/memory/event_pool.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {
namespace {

/// The device primitives of one GPU: cudaMalloc/cudaFree with that device current, pooled events.
class CudaDeviceMemory final : public RawMemory {
 public:
  explicit CudaDeviceMemory(int device) : device_(device) {}

  void* allocate(std::size_t nbytes) override {
    const DeviceGuard guard(device_);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, nbytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // an answer, not a sticky error: the allocator frees and retries
      return nullptr;
    }
    RUCCL_CUDA_CHECK(status);
    return ptr;
  }

  void deallocate(void* ptr, std::size_t /*nbytes*/) override {
    const DeviceGuard guard(device_);
    RUCCL_CUDA_CHECK(cudaFree(ptr));
  }

  EventId record_event(StreamId stream) override {
    // Stream 0 is this device's default stream; any other stream says which device it is of.
    const auto handle = reinterpret_cast<cudaStream_t>(stream);
    const int device = handle == nullptr ? device_ : stream_device(handle);
    return record_pooled_event(device, handle);
  }
  bool event_ready(EventId event) override { return pooled_event_ready(event); }
  void synchronize_event(EventId event) override { synchronize_pooled_event(event); }
  void release_event(EventId event) override { release_pooled_event(event); }

  std::optional<DeviceMemoryInfo> memory_info() override {
    const DeviceGuard guard(device_);
    DeviceMemoryInfo info;
    if (cudaMemGetInfo(&info.free_bytes, &info.total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();  // only for the message: say nothing rather than fail twice
      return std::nullopt;
    }
    return info;
  }

 private:
  int device_;
};

/// One device's allocator, and the error a deleter could not throw (rethrown by the next
/// allocation on that device: a Storage's destructor must not throw).
struct DeviceAllocator {
  explicit DeviceAllocator(int device)
      : blocks(std::make_unique<CudaDeviceMemory>(device), Device::cuda(device).to_string()) {}
  BlockAllocator blocks;
  std::mutex deferred_mutex;
  std::exception_ptr deferred_error;

  void rethrow_deferred() {
    std::exception_ptr error;
    {
      const std::lock_guard<std::mutex> lock(deferred_mutex);
      error = std::exchange(deferred_error, nullptr);
    }
    if (error) {
      std::rethrow_exception(error);
    }
  }
};

/// The allocators, one per device, created on first use and never destroyed (tensors in static
/// objects may be freed after any static allocator would be gone).
DeviceAllocator* allocator_if_created(int device, bool create) {
  struct Table {
    std::mutex mutex;
    std::vector<std::atomic<DeviceAllocator*>> devices;
    explicit Table(std::size_t count) : devices(count) {}
  };
  static Table* const table = new Table(static_cast<std::size_t>(cached_device_count()));
  std::atomic<DeviceAllocator*>& slot = table->devices[static_cast<std::size_t>(device)];
  DeviceAllocator* allocator = slot.load(std::memory_order_acquire);
  if (allocator == nullptr && create) {
    const std::lock_guard<std::mutex> lock(table->mutex);
    allocator = slot.load(std::memory_order_relaxed);
    if (allocator == nullptr) {
      allocator = new DeviceAllocator(device);
      slot.store(allocator, std::memory_order_release);
    }
  }
  return allocator;
}

DeviceAllocator& allocator_of(int device, const char* op) {
  check_device(op, device);
  return *allocator_if_created(device, true);
}

/// The Storage deleter: the block goes back to its device's cache.
void give_back(void* data, void* context) noexcept {
  auto* allocator = static_cast<DeviceAllocator*>(context);
  try {
    allocator->blocks.free(data);
  } catch (...) {
    const std::lock_guard<std::mutex> lock(allocator->deferred_mutex);
    if (!allocator->deferred_error) {
      allocator->deferred_error = std::current_exception();
    }
  }
}

}  // namespace

std::shared_ptr<Storage> allocate_storage(std::size_t nbytes, Device device) {
  RUCCL_CHECK(device.is_cuda(), DeviceError, "allocate_storage: expected a CUDA device, got ",
              device);
  DeviceAllocator& allocator = allocator_of(device.index, "allocate_storage");
  allocator.rethrow_deferred();
  const auto stream = reinterpret_cast<StreamId>(current_stream(device.index));
  void* data = allocator.blocks.allocate(nbytes, stream);
  try {
    // The deleter gets the allocator as its context: no lookup of the device at free time.
    return std::make_shared<Storage>(data, nbytes, device, &give_back, &allocator);
  } catch (...) {
    if (data != nullptr) {
      allocator.blocks.free(data);
    }
    throw;
  }
}

void record_stream(const Storage& storage, cudaStream_t stream) {
  RUCCL_CHECK(storage.device().is_cuda(), DeviceError,
              "record_stream: expected a Storage on a CUDA device, got one on ", storage.device());
  if (storage.data() == nullptr) {
    return;  // 0 bytes: nothing can be reused too early
  }
  DeviceAllocator& allocator = allocator_of(storage.device().index, "record_stream");
  allocator.blocks.record_stream(storage.data(), reinterpret_cast<StreamId>(stream));
}

void empty_cache() {
  for (int device = 0; device < cached_device_count(); ++device) {
    if (DeviceAllocator* allocator = allocator_if_created(device, false)) {
      allocator->blocks.empty_cache();
    }
  }
}

MemoryStats memory_stats(int device) { return allocator_of(device, "memory_stats").blocks.stats(); }

void reset_peak_stats(int device) {
  allocator_of(device, "reset_peak_stats").blocks.reset_peak_stats();
}

}  // namespace ruccl::cuda
