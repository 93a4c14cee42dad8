// The CUDA backend's runtime layer: the stream and allocator of cuda/core and cuda/memory, with
// the backend's wording of "no GPU here".
#include "cuda/backend/runtime.h"

#include "cuda/core/device.h"
#include "cuda/core/stream.h"
#include "cuda/memory/caching_allocator.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {

void require_usable(std::string_view op, Device device) {
  const int count = cached_device_count();
  if (count > 0 && device.is_cuda() && device.index >= 0 && device.index < count) [[likely]] {
    return;
  }
  RUCCL_CHECK(count > 0, DeviceError, op, ": expected a CUDA device, got none (", device_status(),
              ")");
  throw DeviceError(str(op, ": expected a CUDA device index in [0, ", count, "), got ", device));
}

cudaStream_t stream_for(Device device) { return current_stream(device.index); }

std::shared_ptr<Storage> device_storage(std::size_t nbytes, Device device) {
  require_usable("CudaBackend::allocate", device);
  return allocate_storage(nbytes, device);
}

}  // namespace ruccl::cuda
