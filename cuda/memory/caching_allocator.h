#pragma once
// The CUDA caching device allocator: every CUDA tensor's memory comes from here. cudaMalloc and
// cudaFree are slow and synchronise the device, so freed blocks are cached per device and per
// stream and handed out again (the bookkeeping, PyTorch's design, is in
// cuda/memory/block_allocator.h; this is its CUDA adapter).
//
//   auto storage = ruccl::cuda::allocate_storage(nbytes, Device::cuda(0));  // on current_stream(0)
//   ...queue work using it on another stream `side`...
//   ruccl::cuda::record_stream(*storage, side);  // not reused before `side` is done with it
//   storage.reset();                             // back to the cache, not to cudaFree
//   ruccl::cuda::MemoryStats s = ruccl::cuda::memory_stats(0);
//   ruccl::cuda::empty_cache();                  // cached free segments back to the device
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "cuda/memory/memory_stats.h"
#include "tensor/core/device.h"
#include "tensor/core/storage.h"

namespace ruccl::cuda {

/// A Storage of `nbytes` bytes on `device` (a CUDA device), for use on the calling thread's
/// current stream of that device; its deleter gives the block back to the cache. 0 bytes: a
/// Storage without memory (data() is nullptr). Throws DeviceError for a CPU device or a CUDA
/// device this machine does not have, OutOfMemoryError (naming the device, the request and what
/// the allocator holds) when the device cannot provide the memory even after the cache is freed.
std::shared_ptr<Storage> allocate_storage(std::size_t nbytes, Device device);

/// Marks `storage` (from allocate_storage) as used on `stream` too: when freed, its block is not
/// reused before the work queued on `stream` until then is done. Needed whenever memory allocated
/// on one stream is read or written by work on another (communication streams, copies).
/// Throws ValueError for a Storage not from this allocator; a 0-byte Storage is ignored.
void record_stream(const Storage& storage, cudaStream_t stream);

/// Gives every cached free segment of every device back to CUDA (cudaFree), after waiting for the
/// events of blocks freed while other streams used them. Memory in use is not touched.
void empty_cache();

/// The counters of `device`'s allocator (all zero before its first allocation). Throws
/// DeviceError for a device this machine does not have.
MemoryStats memory_stats(int device);

/// Sets `device`'s peak counters to the current values.
void reset_peak_stats(int device);

}  // namespace ruccl::cuda
