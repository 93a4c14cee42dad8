#pragma once
// Events for the caching allocators' bookkeeping (RawMemory::record_event): timing-free
// cudaEvent_t kept per device and reused, so a free that must wait for another stream costs no
// cudaEventCreate. An EventId is the address of a pooled entry that knows its device.
#include <cuda_runtime_api.h>

#include "cuda/memory/raw_memory.h"

namespace ruccl::cuda {

/// Records a pooled event of `device` on `stream` (a stream of that device; nullptr: its default
/// stream) and returns its id. Throws CudaError when the runtime refuses.
EventId record_pooled_event(int device, cudaStream_t stream);
/// Whether the event's work is done (cudaEventQuery; CudaError for a failure of that work).
bool pooled_event_ready(EventId event);
/// Blocks until the event's work is done (cudaEventSynchronize).
void synchronize_pooled_event(EventId event);
/// Returns the event to its device's pool.
void release_pooled_event(EventId event);

}  // namespace ruccl::cuda
