#pragma once
// The few primitives the caching allocators' bookkeeping asks of a device: get and give back
// memory, and order reuse after stream work with events. The CUDA adapters implement them with
// cudaMalloc/cudaFree (device blocks), cudaHostAlloc/cudaFreeHost (pinned host blocks) and pooled
// cudaEvent_t; tests implement them with a fake that hands out addresses and completes events
// when told. This header, and the bookkeeping behind it, include no CUDA header.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ruccl::cuda {

/// A stream as the bookkeeping sees it: an opaque id (a cudaStream_t's bits; 0 = default stream).
using StreamId = std::uintptr_t;
/// An event as the bookkeeping sees it: an opaque id given by RawMemory::record_event.
using EventId = std::uintptr_t;

/// Free and total bytes of a device (cudaMemGetInfo), for out-of-memory messages.
struct DeviceMemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

/// The primitives behind a caching allocator. Calls come under the allocator's lock, one at a time.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  /// `nbytes` fresh bytes, or nullptr when the device is out of memory (the allocator then frees
  /// its cache and asks once more). Any other failure throws.
  virtual void* allocate(std::size_t nbytes) = 0;
  /// Gives back what allocate(nbytes) returned.
  virtual void deallocate(void* ptr, std::size_t nbytes) = 0;
  /// Captures the work queued on `stream` so far in an event and returns its id.
  virtual EventId record_event(StreamId stream) = 0;
  /// Whether the work the event captured is done. Events of one stream complete in record order.
  virtual bool event_ready(EventId event) = 0;
  /// Blocks until the work the event captured is done.
  virtual void synchronize_event(EventId event) = 0;
  /// The event is no longer needed (the adapter may pool it).
  virtual void release_event(EventId event) = 0;
  /// Free and total bytes of the device, when known.
  virtual std::optional<DeviceMemoryInfo> memory_info() { return std::nullopt; }
};

}  // namespace ruccl::cuda
