// DeviceEngine (device_engine.h): picks the device-to-device path or pinned host staging.
#include "cuda/collective/device_engine.h"

#include <algorithm>

#include "cuda/collective/device_streams.h"
#include "cuda/collective/nccl_group.h"
#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"

namespace ruccl::cuda {

namespace {

// A reduction's input on the device: contiguous, in its accumulation dtype.
Tensor device_reduction_input(const Tensor& t) {
  const Tensor c = t.contiguous();
  const DType acc = accumulation_dtype(t.dtype());
  return acc == c.dtype() ? c : c.to(acc).contiguous();
}

Tensor back_to(const Tensor& out, DType dtype) {
  return out.dtype() == dtype ? out : out.to(dtype);
}

std::optional<Tensor> back_to(const std::optional<Tensor>& out, DType dtype) {
  if (!out) return std::nullopt;
  return back_to(*out, dtype);
}

Tensor to_device(const Tensor& host, Device device) { return host.to(device); }
std::optional<Tensor> to_device(const std::optional<Tensor>& host, Device device) {
  if (!host) return std::nullopt;
  return host->to(device);
}
AllToAllVResult to_device(AllToAllVResult r, Device device) {
  r.output = r.output.to(device);
  return r;
}

}  // namespace

PinnedStage::~PinnedStage() {
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

std::vector<cudaEvent_t> PinnedStage::fill(const void* src, std::size_t nbytes, std::size_t segment,
                                           cudaStream_t stream) {
  // The previous fill's copies may still run if its call failed: let them land first.
  for (std::size_t k = 0; k < used_events_; ++k) RUCCL_CUDA_CHECK(cudaEventSynchronize(events_[k]));
  used_events_ = 0;
  if (nbytes > buffer_.size()) {
    std::size_t size = std::size_t{1} << 20;  // powers of two: a growing tensor reallocates rarely
    while (size < nbytes) size *= 2;
    buffer_ = allocate_pinned(size);  // the old buffer goes back to the pool (its copies are done)
  }
  const std::size_t segments = nbytes == 0 ? 0 : (nbytes + segment - 1) / segment;
  while (events_.size() < segments) {
    cudaEvent_t e = nullptr;
    RUCCL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  for (std::size_t k = 0; k < segments; ++k) {
    const std::size_t begin = k * segment;
    const std::size_t length = std::min(segment, nbytes - begin);
    RUCCL_CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(buffer_.data()) + begin,
                                     static_cast<const unsigned char*>(src) + begin, length,
                                     cudaMemcpyDeviceToHost, stream));
    RUCCL_CUDA_CHECK(cudaEventRecord(events_[k], stream));
    used_events_ = k + 1;
  }
  if (segments != 0) buffer_.record_stream(stream);
  return std::vector<cudaEvent_t>(events_.begin(),
                                  events_.begin() + static_cast<std::ptrdiff_t>(segments));
}

DeviceEngine::DeviceEngine(Transport& transport, Device device, const CommunicatorOptions& options)
    : transport_(transport),
      device_(device),
      options_(options),
      staging_(transport),
      host_(staging_, Device::cpu(), options, /*host_only=*/true) {
  // Peers' device pointers are usable only where every rank is in this process.
  if (transport.traits().same_address_space) {
    peer_ = std::make_unique<PeerCollectives>(transport, device);
  }
}

bool DeviceEngine::peer_path(const EngineCall& call) {
  return peer_ != nullptr && peer_->accessible(call);
}

Tensor DeviceEngine::stage(const EngineCall& call, const Tensor& t, bool overlap) {
  if (!t.defined()) return Tensor();
  DeviceGuard guard(device_.index);
  const Tensor in = t.contiguous();
  const std::size_t segment = std::max<std::size_t>(options_.segment_bytes, std::size_t{1} << 20);
  std::vector<cudaEvent_t> events =
      pinned_.fill(in.data_ptr(), in.nbytes(), segment, collective_stream(device_));
  staging_.stage(pinned_.data(), in.nbytes(), segment, std::move(events));
  if (!overlap || transport_.world_size() == 1) staging_.wait_staged(call.deadline());
  // A CPU view of the pinned bytes (not owned: the stage outlives the call).
  auto storage =
      std::make_shared<Storage>(pinned_.data(), in.nbytes(), Device::cpu(), nullptr, nullptr);
  return Tensor(std::move(storage), in.shape(), in.shape().contiguous_strides(), 0, in.dtype());
}

template <typename Body>
auto DeviceEngine::staged(const EngineCall& call, const Tensor& t, bool overlap, Body&& body) {
  struct Unstage {
    StagingTransport& s;
    ~Unstage() { s.unstage(); }
  } unstage{staging_};
  const Tensor host = stage(call, t, overlap);
  return to_device(body(host), device_);
}

// Overlapped staging only where every algorithm's first read of the input is a send (or follows
// a receive): all_reduce, reduce, broadcast and all_gather. The others wait for the whole copy.

Tensor DeviceEngine::all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (peer_path(call))
    return back_to(peer_->all_reduce(call, device_reduction_input(t), op), t.dtype());
  // Staged in the accumulation dtype, converted on the GPU: the host algorithms then read the
  // pinned bytes only through sends and after receives, which wait for the segments' copies (a
  // host-side F16 -> F32 conversion would read the buffer before the copy into it finished).
  const Tensor in = device_reduction_input(t);
  return back_to(
      staged(call, in, true, [&](const Tensor& h) { return host_.all_reduce(call, h, op); }),
      t.dtype());
}

std::optional<Tensor> DeviceEngine::reduce(const EngineCall& call, const Tensor& t, int root,
                                           ReduceOperation op) {
  if (peer_path(call)) {
    return back_to(peer_->reduce(call, device_reduction_input(t), root, op), t.dtype());
  }
  const Tensor in = device_reduction_input(t);  // as all_reduce: converted before staging
  return back_to(
      staged(call, in, true, [&](const Tensor& h) { return host_.reduce(call, h, root, op); }),
      t.dtype());
}

Tensor DeviceEngine::reduce_scatter(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (peer_path(call)) {
    return back_to(peer_->reduce_scatter(call, device_reduction_input(t), op), t.dtype());
  }
  return staged(call, t, false, [&](const Tensor& h) { return host_.reduce_scatter(call, h, op); });
}

Tensor DeviceEngine::broadcast(const EngineCall& call, const Tensor& t, int root) {
  const bool is_root = transport_.rank() == root;
  if (peer_path(call)) return peer_->broadcast(call, is_root ? t.contiguous() : Tensor(), root);
  return staged(call, is_root ? t : Tensor(), true,
                [&](const Tensor& h) { return host_.broadcast(call, h, root); });
}

Tensor DeviceEngine::all_gather(const EngineCall& call, const Tensor& t) {
  if (peer_path(call)) return peer_->all_gather(call, t.contiguous());
  return staged(call, t, true, [&](const Tensor& h) { return host_.all_gather(call, h); });
}

std::optional<Tensor> DeviceEngine::gather(const EngineCall& call, const Tensor& t, int root) {
  if (peer_path(call)) return peer_->gather(call, t.contiguous(), root);
  return staged(call, t, false, [&](const Tensor& h) { return host_.gather(call, h, root); });
}

Tensor DeviceEngine::scatter(const EngineCall& call, const Tensor& t, int root) {
  const bool is_root = transport_.rank() == root;
  if (peer_path(call)) return peer_->scatter(call, is_root ? t.contiguous() : Tensor(), root);
  return staged(call, is_root ? t : Tensor(), false,
                [&](const Tensor& h) { return host_.scatter(call, h, root); });
}

Tensor DeviceEngine::all_to_all(const EngineCall& call, const Tensor& t) {
  if (peer_path(call)) return peer_->all_to_all(call, t.contiguous());
  return staged(call, t, false, [&](const Tensor& h) { return host_.all_to_all(call, h); });
}

AllToAllVResult DeviceEngine::all_to_all_v(const EngineCall& call, const Tensor& t,
                                           std::span<const std::int64_t> send_counts) {
  // Uneven blocks: staged on the host on every path (the counts are exchanged there first).
  return staged(call, t, false,
                [&](const Tensor& h) { return host_.all_to_all_v(call, h, send_counts); });
}

std::unique_ptr<CollectiveEngine> make_device_engine(Transport& transport, Device device,
                                                     const CommunicatorOptions& options) {
  return std::make_unique<DeviceEngine>(transport, device, options);
}

void install_collectives() {
  register_device_engine(DeviceType::CUDA, &make_device_engine);
  install_nccl_env_engine();
}

// Registered at load time by the CUDA backend's install() (cuda/backend/cuda_backend.cpp), which
// every program linking ruccl::ruccl runs.

}  // namespace ruccl::cuda
