// The CUDA backend's runtime layer. Stand-in until cuda/core/stream.h and the caching allocator
// land: the current stream is the device's default stream and memory comes from the driver's
// stream-ordered pool (cudaMallocAsync), freed in stream order.
#include "cuda/backend/runtime.h"

#include <mutex>
#include <string>

#include "cuda/core/check.h"
#include "cuda/core/device.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {

namespace {

int usable_devices() {
  static const int count = device_count();
  return count;
}

void free_async(void* p) {
  // Storage deleters must not throw: a failure here (a context already torn down at exit) leaks.
  if (cudaFreeAsync(p, nullptr) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace

void require_usable(std::string_view op, Device device) {
  const int count = usable_devices();
  RUCCL_CHECK(count > 0, DeviceError, op, ": expected a CUDA device, got none (", device_status(),
              ")");
  RUCCL_CHECK(device.is_cuda() && device.index >= 0 && device.index < count, DeviceError, op,
              ": expected a CUDA device index in [0, ", count, "), got ", device);
}

ScopedDevice::ScopedDevice(Device device) {
  RUCCL_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device.index) {
    RUCCL_CUDA_CHECK(cudaSetDevice(device.index));
  } else {
    previous_ = -1;
  }
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

cudaStream_t stream_for(Device /*device*/) { return nullptr; }

std::shared_ptr<Storage> device_storage(std::size_t nbytes, Device device) {
  require_usable("CudaBackend::allocate", device);
  void* p = nullptr;
  if (nbytes > 0) {
    const ScopedDevice scope(device);
    const cudaError_t status = cudaMallocAsync(&p, nbytes, stream_for(device));
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw OutOfMemoryError(str("CudaBackend::allocate: out of memory: ", device,
                                 " could not provide ", nbytes, " bytes"));
    }
    RUCCL_CUDA_CHECK(status);
  }
  return std::make_shared<Storage>(p, nbytes, device, &free_async);
}

}  // namespace ruccl::cuda
