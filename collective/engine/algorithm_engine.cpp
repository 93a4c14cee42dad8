// AlgorithmEngine: the reducing collectives and broadcast. The data-movement collectives are in
// algorithm_engine_moves.cpp.
#include "collective/engine/algorithm_engine.h"

#include <atomic>

#include "collective/algorithms/algorithm.h"
#include "collective/algorithms/selection.h"

namespace ruccl {

namespace {

// A reduction's input on the host, contiguous, in its accumulation dtype.
Tensor reduction_input(const Tensor& t) {
  Tensor host = host_contiguous(t);
  const DType acc = accumulation_dtype(t.dtype());
  return acc == host.dtype() ? host : host.to(acc).contiguous();
}

// Converts a host result in the accumulation dtype back to the caller's dtype and device.
Tensor reduction_output(const Tensor& out, DType dtype, Device device) {
  Tensor result = out.dtype() == dtype ? out : out.to(dtype);
  return device.is_cpu() ? result : result.to(device);
}

Tensor to_device(const Tensor& host, Device device) {
  return device.is_cpu() ? host : host.to(device);
}

std::atomic<DeviceEngineFactory> device_engine_factories[2];  // index: DeviceType

}  // namespace

void register_device_engine(DeviceType type, DeviceEngineFactory factory) {
  device_engine_factories[static_cast<std::size_t>(type)].store(factory);
}

AlgorithmEngine::AlgorithmEngine(Transport& transport, Device device,
                                 const CommunicatorOptions& options, bool host_only)
    : transport_(transport), device_(device), options_(options) {
  if (host_only || device.is_cpu()) return;
  const DeviceEngineFactory factory =
      device_engine_factories[static_cast<std::size_t>(device.type)].load();
  if (factory != nullptr) device_engine_ = factory(transport, device, options);
}

std::string AlgorithmEngine::name() const {
  return device_engine_ ? device_engine_->name() : "algorithms";
}

bool AlgorithmEngine::supports(OpKind, DType, Device) const {
  return true;  // every collective of every dtype, staged on the host from any device
}

bool AlgorithmEngine::sends_with_agreement(OpKind kind, Algorithm algorithm) const {
  if (device_engine_) return device_engine_->sends_with_agreement(kind, algorithm);
  return kind == OpKind::AllReduce && algorithm == Algorithm::Direct;
}

Tensor AlgorithmEngine::all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  if (device_engine_) return device_engine_->all_reduce(call, t, op);
  const AlgorithmContext ctx = call.context.on(transport_);
  const Tensor in = reduction_input(t);
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  const ReduceKernel kernel(in.dtype(), op);
  const auto count = static_cast<std::size_t>(in.numel());
  switch (call.algorithm()) {
    case Algorithm::Ring:
      ring_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel,
                      ring_segment_bytes(options_, ctx.world(), transport_.traits().link));
      break;
    case Algorithm::Tree:
      tree_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel, call.record.tree_arity);
      break;
    case Algorithm::Centralized:
      centralized_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel);
      break;
    case Algorithm::RecursiveDoubling:
      recursive_doubling_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel);
      break;
    case Algorithm::HalvingDoubling:
      halving_doubling_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel);
      break;
    default:
      direct_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel,
                        options_.direct_fold_all_bytes);
  }
  return reduction_output(out, t.dtype(), device_);
}

std::optional<Tensor> AlgorithmEngine::reduce(const EngineCall& call, const Tensor& t, int root,
                                              ReduceOperation op) {
  if (device_engine_) return device_engine_->reduce(call, t, root, op);
  const AlgorithmContext ctx = call.context.on(transport_);
  const Tensor in = reduction_input(t);
  const bool is_root = transport_.rank() == root;
  Tensor out = is_root ? Tensor::empty(in.shape(), in.dtype()) : Tensor();
  void* out_ptr = is_root ? out.data_ptr() : nullptr;
  const ReduceKernel kernel(in.dtype(), op);
  const auto count = static_cast<std::size_t>(in.numel());
  switch (call.algorithm()) {
    case Algorithm::Ring:
      ring_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root,
                  ring_segment_bytes(options_, ctx.world(), transport_.traits().link));
      break;
    case Algorithm::Tree:
      tree_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root, call.record.tree_arity);
      break;
    case Algorithm::RecursiveDoubling:
      recursive_doubling_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root);
      break;
    case Algorithm::HalvingDoubling:
      halving_doubling_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root);
      break;
    default:
      direct_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root);
  }
  if (!is_root) return std::nullopt;
  return reduction_output(out, t.dtype(), device_);
}

Tensor AlgorithmEngine::reduce_scatter(const EngineCall& call, const Tensor& t,
                                       ReduceOperation op) {
  if (device_engine_) return device_engine_->reduce_scatter(call, t, op);
  const Tensor in = reduction_input(t);
  Shape shard = in.shape();
  shard[0] = shard[0] / transport_.world_size();
  Tensor out = Tensor::empty(shard, in.dtype());
  const ReduceKernel kernel(in.dtype(), op);
  direct_reduce_scatter(call.context.on(transport_), in.data_ptr(), out.data_ptr(),
                        static_cast<std::size_t>(in.numel()), kernel);
  return reduction_output(out, t.dtype(), device_);
}

Tensor AlgorithmEngine::broadcast(const EngineCall& call, const Tensor& t, int root) {
  if (device_engine_) return device_engine_->broadcast(call, t, root);
  const AlgorithmContext ctx = call.context.on(transport_);
  const CallRecord& root_record = call.records[static_cast<std::size_t>(root)];
  const bool is_root = transport_.rank() == root;
  // Peers read root's `in` in place (no broadcast algorithm writes root's buffer), and root's own
  // result is a copy made afterwards: so an abort during the transfer fails root at once instead
  // of after copying the whole tensor first.
  const Tensor in = is_root ? host_contiguous(t) : Tensor();
  Tensor out = Tensor::empty(root_record.shape(), static_cast<DType>(root_record.dtype));
  void* buf = is_root ? const_cast<void*>(in.data_ptr()) : out.data_ptr();
  const std::size_t nbytes = out.nbytes();
  // Auto stays Auto in the record (non-roots did not know the size): resolved here from root's.
  Algorithm algorithm = call.algorithm();
  if (algorithm == Algorithm::Auto) {
    algorithm = auto_algorithm(OpKind::Broadcast, nbytes, transport_.traits().link, options_,
                               transport_.world_size());
  }
  switch (algorithm) {
    case Algorithm::Ring:
      ring_broadcast(ctx, buf, nbytes, root, options_.segment_bytes);
      break;
    case Algorithm::Tree:
      tree_broadcast(ctx, buf, nbytes, root, call.record.tree_arity);
      break;
    case Algorithm::RecursiveDoubling:
      recursive_doubling_broadcast(ctx, buf, nbytes, root);
      break;
    default:
      direct_broadcast(ctx, buf, nbytes, root);
  }
  if (is_root) copy_bytes(out.data_ptr(), in.data_ptr(), nbytes);  // never the caller's memory
  return to_device(out, device_);
}

std::unique_ptr<CollectiveEngine> make_algorithm_engine(Transport& transport, Device device,
                                                        const CommunicatorOptions& options) {
  return std::make_unique<AlgorithmEngine>(transport, device, options);
}

Tensor host_contiguous(const Tensor& t) {
  Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  return host.contiguous();
}

DType accumulation_dtype(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? DType::F32 : dtype;
}

}  // namespace ruccl
