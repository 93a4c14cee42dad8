// PeerCollectives: the data-movement collectives, device-to-device copies from the peers' buffers
// (peer_collectives.h). The reductions are in peer_collectives.cpp.
#include "cuda/collective/device_streams.h"
#include "cuda/collective/peer_collectives_internal.h"
#include "cuda/core/device_guard.h"

namespace ruccl::cuda {

using namespace peer_detail;

Tensor PeerCollectives::broadcast(const EngineCall& call, const Tensor& in, int root) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const CallRecord& rr = call.records[static_cast<std::size_t>(root)];
  Tensor out = Tensor::empty(rr.shape(), static_cast<DType>(rr.dtype), device_);
  const bool is_root = transport_.rank() == root;
  guarded([&] {
    const Peers p = open(call, is_root ? in.data_ptr() : nullptr, nullptr, out.data_ptr(), false);
    if (!is_root) RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(root, kStart), 0));
    copy_async(out.data_ptr(), p.in(root), out.nbytes(), stream_);
    close(call, p);
  });
  return out;
}

Tensor PeerCollectives::all_gather(const EngineCall& call, const Tensor& in) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const int w = transport_.world_size();
  Shape shape = in.shape().empty() ? Shape{1} : in.shape();
  shape[0] = shape[0] * w;
  Tensor out = Tensor::empty(shape, in.dtype(), device_);
  guarded([&] {
    const Peers p = open(call, in.data_ptr(), nullptr, out.data_ptr(), true);
    const std::size_t block = in.nbytes();
    for (int q = 0; q < w; ++q) {
      copy_async(at(out.data_ptr(), static_cast<std::size_t>(q) * block), p.in(q), block, stream_);
    }
    close(call, p);
  });
  return out;
}

std::optional<Tensor> PeerCollectives::gather(const EngineCall& call, const Tensor& in, int root) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const int w = transport_.world_size();
  const bool is_root = transport_.rank() == root;
  Tensor out;
  if (is_root) {
    Shape shape = in.shape().empty() ? Shape{1} : in.shape();
    shape[0] = shape[0] * w;
    out = Tensor::empty(shape, in.dtype(), device_);
  }
  guarded([&] {
    const Peers p = open(call, in.data_ptr(), nullptr, nullptr, is_root);
    if (is_root) {
      const std::size_t block = in.nbytes();
      for (int q = 0; q < w; ++q) {
        copy_async(at(out.data_ptr(), static_cast<std::size_t>(q) * block), p.in(q), block,
                   stream_);
      }
    }
    close(call, p);
  });
  if (!is_root) return std::nullopt;
  return out;
}

Tensor PeerCollectives::scatter(const EngineCall& call, const Tensor& in, int root) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const CallRecord& rr = call.records[static_cast<std::size_t>(root)];
  Shape block = rr.shape();
  block[0] = block[0] / transport_.world_size();
  Tensor out = Tensor::empty(block, static_cast<DType>(rr.dtype), device_);
  const bool is_root = transport_.rank() == root;
  guarded([&] {
    const Peers p = open(call, is_root ? in.data_ptr() : nullptr, nullptr, nullptr, false);
    if (!is_root) RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(root, kStart), 0));
    copy_async(out.data_ptr(), p.in(root) + static_cast<std::size_t>(p.rank) * out.nbytes(),
               out.nbytes(), stream_);
    close(call, p);
  });
  return out;
}

Tensor PeerCollectives::all_to_all(const EngineCall& call, const Tensor& in) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const int w = transport_.world_size();
  Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
  guarded([&] {
    const Peers p = open(call, in.data_ptr(), nullptr, out.data_ptr(), true);
    const std::size_t block = in.nbytes() / static_cast<std::size_t>(w);
    const auto mine = static_cast<std::size_t>(p.rank);
    for (int q = 0; q < w; ++q) {
      copy_async(at(out.data_ptr(), static_cast<std::size_t>(q) * block), p.in(q) + mine * block,
                 block, stream_);
    }
    close(call, p);
  });
  return out;
}

}  // namespace ruccl::cuda
