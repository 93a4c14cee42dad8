#pragma once
// The current CUDA device for a scope, and the cheap device check every entry point of the CUDA
// layer runs first.
//
//   {
//     ruccl::cuda::DeviceGuard guard(1);  // cudaSetDevice(1) if it is not current already
//     launch_kernel(..., stream);         // runs with device 1 current
//   }                                     // the previous device is current again
#include <string_view>

namespace ruccl::cuda {

/// Throws DeviceError "<op>(cuda:<device>): expected a CUDA device, got none (<why>)" on a machine
/// without a usable GPU, or "<op>(cuda:<device>): expected a CUDA device index in [0, n), got
/// <device>" for an index this machine does not have. Cheap when the device exists (no string is
/// built). The device count is asked of the runtime once per process (it does not
/// change while the process runs: CUDA_VISIBLE_DEVICES is read at initialisation).
void check_device(std::string_view op, int device);

/// The number of usable devices, asked once per process (0 without a GPU or driver). Never throws.
int cached_device_count();

/// Makes `device` the calling thread's current CUDA device for the guard's lifetime and restores
/// the previous one on destruction (only when it changed: cudaSetDevice is not free). Throws
/// DeviceError (check_device) for a device this machine does not have, CudaError when the runtime
/// refuses. Not copyable, not movable: a guard belongs to its scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  /// The device the guard made current.
  int device() const { return device_; }
  /// The device that was current before, and will be again after the guard.
  int previous_device() const { return previous_; }

 private:
  int device_;
  int previous_;
};

/// The calling thread's current CUDA device (cudaGetDevice). Throws CudaError without a device.
int current_device();

}  // namespace ruccl::cuda
