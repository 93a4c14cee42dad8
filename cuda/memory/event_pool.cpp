#include "cuda/memory/event_pool.h"

#include <mutex>
#include <vector>

#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"

namespace ruccl::cuda {
namespace {

struct PooledEvent {
  cudaEvent_t event = nullptr;
  int device = 0;
};

/// Free pooled events of every device; entries are never destroyed (they live for the process,
/// like the streams they are recorded on).
struct EventPool {
  std::mutex mutex;
  std::vector<std::vector<PooledEvent*>> free_per_device;
};

EventPool& event_pool() {
  static EventPool* const pool = [] {
    auto* created = new EventPool;
    created->free_per_device.resize(static_cast<std::size_t>(std::max(cached_device_count(), 1)));
    return created;
  }();
  return *pool;
}

PooledEvent* entry(EventId event) { return reinterpret_cast<PooledEvent*>(event); }

}  // namespace

EventId record_pooled_event(int device, cudaStream_t stream) {
  check_device("record_pooled_event", device);
  const DeviceGuard guard(device);
  PooledEvent* pooled = nullptr;
  {
    EventPool& pool = event_pool();
    const std::lock_guard<std::mutex> lock(pool.mutex);
    auto& free = pool.free_per_device[static_cast<std::size_t>(device)];
    if (!free.empty()) {
      pooled = free.back();
      free.pop_back();
    }
  }
  if (pooled == nullptr) {
    cudaEvent_t event = nullptr;
    RUCCL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    pooled = new PooledEvent{event, device};
  }
  const cudaError_t status = cudaEventRecord(pooled->event, stream);
  if (status != cudaSuccess) {
    release_pooled_event(reinterpret_cast<EventId>(pooled));
    RUCCL_CUDA_CHECK(status);
  }
  return reinterpret_cast<EventId>(pooled);
}

bool pooled_event_ready(EventId event) {
  const cudaError_t status = cudaEventQuery(entry(event)->event);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it so later checks start clean
    return false;
  }
  RUCCL_CUDA_CHECK(status);
  return true;
}

void synchronize_pooled_event(EventId event) {
  RUCCL_CUDA_CHECK(cudaEventSynchronize(entry(event)->event));
}

void release_pooled_event(EventId event) {
  PooledEvent* pooled = entry(event);
  EventPool& pool = event_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free_per_device[static_cast<std::size_t>(pooled->device)].push_back(pooled);
}

}  // namespace ruccl::cuda
