#pragma once
// What the CUDA backend needs of the CUDA runtime layer, behind one small interface: the current
// stream of a device, device selection for the duration of a call, device memory, and whether a
// GPU is there at all.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "tensor/core/device.h"
#include "tensor/core/storage.h"

namespace ruccl::cuda {

/// Throws DeviceError "<op>: expected a CUDA device, got none (no CUDA GPU: ...)" when no GPU is
/// usable, or "<op>: expected a CUDA device index in [0, n), got i" for a device not here. The
/// device count is queried once per process.
void require_usable(std::string_view op, Device device);

/// Makes `device` current for the scope, restoring the previous device at its end.
class ScopedDevice {
 public:
  explicit ScopedDevice(Device device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

/// The stream backend calls on `device` are ordered on.
cudaStream_t stream_for(Device device);

/// `nbytes` of device memory on `device` for a Storage, ordered on its current stream.
std::shared_ptr<Storage> device_storage(std::size_t nbytes, Device device);

/// Scratch memory for one backend call (reduction partials, error flags), freed when it goes out
/// of scope; usable by work queued on stream_for(device) before then.
class Workspace {
 public:
  Workspace(std::size_t nbytes, Device device) : storage_(device_storage(nbytes, device)) {}
  void* data() const { return storage_->data(); }

 private:
  std::shared_ptr<Storage> storage_;
};

}  // namespace ruccl::cuda
