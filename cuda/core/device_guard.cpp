#include "cuda/core/device_guard.h"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/core/check.h"
#include "cuda/core/device.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {

int cached_device_count() {
  static const int count = device_count();
  return count;
}

void check_device(std::string_view op, int device) {
  const int count = cached_device_count();
  if (count > 0 && device >= 0 && device < count) [[likely]] {
    return;  // the hot path (every current_stream and allocation): no string is built
  }
  // The rare path: let require_device word the reason (it asks the runtime again, for the why).
  const std::string named = str(op, "(cuda:", device, ")");
  require_device(named, device);
  // The runtime found a device it did not find before (it cannot: the count is fixed at its
  // initialisation); still refuse, with our count.
  throw DeviceError(str(named, ": expected a CUDA device index in [0, ", count, "), got ", device));
}

int current_device() {
  int device = 0;
  RUCCL_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

DeviceGuard::DeviceGuard(int device) : device_(device), previous_(device) {
  check_device("DeviceGuard", device);
  previous_ = current_device();
  if (previous_ != device_) {
    RUCCL_CUDA_CHECK(cudaSetDevice(device_));
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ != device_) {
    // A destructor cannot throw; setting back a device that was current a moment ago fails only
    // with a broken driver, which the next checked call reports. Clear the status for it.
    if (cudaSetDevice(previous_) != cudaSuccess) {
      (void)cudaGetLastError();
    }
  }
}

}  // namespace ruccl::cuda
