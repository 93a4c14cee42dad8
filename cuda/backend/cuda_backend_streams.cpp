// CudaBackend: streams, events, synchronisation and device-to-device copies (cuda/core/stream.h).
#include <cuda_runtime.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/tensor_refs.h"
#include "cuda/core/check.h"
#include "cuda/core/stream.h"

namespace ruccl::cuda {

namespace {

cudaStream_t to_cuda(const Stream& s) { return reinterpret_cast<cudaStream_t>(s.handle); }

Stream to_stream(Device device, cudaStream_t s) {
  return {device, reinterpret_cast<std::uintptr_t>(s)};
}

/// Backend Event over a CudaEvent (cuda/core/stream.h).
class CudaBackendEvent final : public Event {
 public:
  explicit CudaBackendEvent(const Stream& stream) {
    const ScopedDevice scope(stream.device);
    event_.record(to_cuda(stream));
  }
  void synchronize() override { event_.synchronize(); }
  bool ready() const override { return event_.ready(); }
  void block(const Stream& stream) override {
    const ScopedDevice scope(stream.device);
    event_.block(to_cuda(stream));
  }

 private:
  CudaEvent event_;
};

}  // namespace

Stream CudaBackend::current_stream(Device device) {
  require_usable("CudaBackend::current_stream", device);
  return to_stream(device, cuda::current_stream(device.index));
}

void CudaBackend::set_current_stream(const Stream& stream) {
  require_usable("CudaBackend::set_current_stream", stream.device);
  cuda::set_current_stream(stream.device.index, to_cuda(stream));
}

Stream CudaBackend::create_stream(Device device) {
  require_usable("CudaBackend::create_stream", device);
  return to_stream(device, new_stream(device.index));
}

void CudaBackend::synchronize(Device device) {
  require_usable("CudaBackend::synchronize", device);
  synchronize_device(device.index);
}

std::unique_ptr<Event> CudaBackend::record_event(const Stream& stream) {
  require_usable("CudaBackend::record_event", stream.device);
  return std::make_unique<CudaBackendEvent>(stream);
}

void CudaBackend::copy_bytes(const Storage& src, std::size_t src_offset, Storage& dst,
                             std::size_t dst_offset, std::size_t nbytes) {
  RUCCL_ASSERT(src_offset + nbytes <= src.nbytes() && dst_offset + nbytes <= dst.nbytes());
  RUCCL_ASSERT(src.device().is_cuda() && dst.device().is_cuda());
  if (nbytes == 0) return;
  const Device to = dst.device();
  const Device from = src.device();
  const ScopedDevice scope(to);
  const cudaStream_t stream = stream_for(to);
  const char* s = static_cast<const char*>(src.data()) + src_offset;
  char* d = static_cast<char*>(dst.data()) + dst_offset;
  if (from == to) {
    RUCCL_CUDA_CHECK(cudaMemcpyAsync(d, s, nbytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  // A peer copy on the destination's stream, ordered both ways with the source device's current
  // stream: the copy waits for the work queued there so far (which wrote src), and later work
  // there, the allocator's reuse of src's block included, waits for the copy (as PyTorch orders
  // its cross-device copies).
  CudaEvent written;
  {
    const ScopedDevice source(from);
    written.record(stream_for(from));
  }
  written.block(stream);
  RUCCL_CUDA_CHECK(cudaMemcpyPeerAsync(d, to.index, s, from.index, nbytes, stream));
  CudaEvent copied;
  copied.record(stream);
  const ScopedDevice source(from);
  copied.block(stream_for(from));
}

}  // namespace ruccl::cuda
