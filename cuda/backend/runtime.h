#pragma once
// What the CUDA backend needs of the CUDA runtime layer, behind one small interface: whether a
// GPU is there, device selection for the duration of a call (cuda/core/device_guard.h), the
// current stream of a device (cuda/core/stream.h) and device memory from the caching allocator
// (cuda/memory/caching_allocator.h).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "cuda/core/device_guard.h"
#include "tensor/core/device.h"
#include "tensor/core/storage.h"

namespace ruccl::cuda {

/// Throws DeviceError "<op>: expected a CUDA device, got none (no CUDA GPU: ...)" when no GPU is
/// usable, or "<op>: expected a CUDA device index in [0, n), got cuda:i" for a device not here.
/// The device count is asked of the runtime once per process.
void require_usable(std::string_view op, Device device);

/// Makes `device` current for the scope, restoring the previous device at its end.
class ScopedDevice {
 public:
  explicit ScopedDevice(Device device) : guard_(device.index) {}

 private:
  DeviceGuard guard_;
};

/// The stream this thread's backend calls on `device` are ordered on (its current stream).
cudaStream_t stream_for(Device device);

/// `nbytes` of device memory on `device` for a Storage, from the caching allocator on the
/// device's current stream.
std::shared_ptr<Storage> device_storage(std::size_t nbytes, Device device);

/// Scratch memory for one backend call (reduction partials, error flags), returned to the
/// allocator when it goes out of scope: work queued on stream_for(device) before then may use it
/// (the allocator reuses a block in stream order).
class Workspace {
 public:
  Workspace(std::size_t nbytes, Device device) : storage_(device_storage(nbytes, device)) {}
  void* data() const { return storage_->data(); }

 private:
  std::shared_ptr<Storage> storage_;
};

}  // namespace ruccl::cuda
