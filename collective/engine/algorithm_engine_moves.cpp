// AlgorithmEngine: the data-movement collectives (no arithmetic; any dtype, bytes moved as they
// are).
#include <numeric>

#include "collective/algorithms/algorithm.h"
#include "collective/algorithms/selection.h"
#include "collective/engine/algorithm_engine.h"

namespace ruccl {

namespace {

Tensor to_device(const Tensor& host, Device device) {
  return device.is_cpu() ? host : host.to(device);
}

// all_gather/gather treat a 0-d tensor as shape [1].
Shape gathered_shape(const Shape& shape, int world) {
  Shape out = shape.empty() ? Shape{1} : shape;
  out[0] = out[0] * world;
  return out;
}

}  // namespace

Tensor AlgorithmEngine::all_gather(const EngineCall& call, const Tensor& t) {
  if (device_engine_) return device_engine_->all_gather(call, t);
  const Tensor in = host_contiguous(t);
  Tensor out = Tensor::empty(gathered_shape(in.shape(), transport_.world_size()), in.dtype());
  // Auto stays Auto in the record: resolved here from the agreed shape, the same on every rank.
  Algorithm algorithm = call.algorithm();
  if (algorithm == Algorithm::Auto) {
    algorithm = auto_algorithm(OpKind::AllGather, in.nbytes(), transport_.traits().link, options_,
                               transport_.world_size());
  }
  if (algorithm == Algorithm::RecursiveDoubling) {
    recursive_doubling_all_gather(call.context.on(transport_), in.data_ptr(), out.data_ptr(),
                                  in.nbytes());
  } else {
    direct_all_gather(call.context.on(transport_), in.data_ptr(), out.data_ptr(), in.nbytes());
  }
  return to_device(out, device_);
}

std::optional<Tensor> AlgorithmEngine::gather(const EngineCall& call, const Tensor& t, int root) {
  if (device_engine_) return device_engine_->gather(call, t, root);
  const Tensor in = host_contiguous(t);
  const bool is_root = transport_.rank() == root;
  Tensor out = is_root
                   ? Tensor::empty(gathered_shape(in.shape(), transport_.world_size()), in.dtype())
                   : Tensor();
  direct_gather(call.context.on(transport_), in.data_ptr(), is_root ? out.data_ptr() : nullptr,
                in.nbytes(), root);
  if (!is_root) return std::nullopt;
  return to_device(out, device_);
}

Tensor AlgorithmEngine::scatter(const EngineCall& call, const Tensor& t, int root) {
  if (device_engine_) return device_engine_->scatter(call, t, root);
  const CallRecord& rec = call.records[static_cast<std::size_t>(root)];
  Shape block = rec.shape();
  block[0] = block[0] / transport_.world_size();
  Tensor out = Tensor::empty(block, static_cast<DType>(rec.dtype));
  const Tensor in = transport_.rank() == root ? host_contiguous(t) : Tensor();
  direct_scatter(call.context.on(transport_), in.defined() ? in.data_ptr() : nullptr,
                 out.data_ptr(), out.nbytes(), root);
  return to_device(out, device_);
}

Tensor AlgorithmEngine::all_to_all(const EngineCall& call, const Tensor& t) {
  if (device_engine_) return device_engine_->all_to_all(call, t);
  const Tensor in = host_contiguous(t);
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  direct_all_to_all(call.context.on(transport_), in.data_ptr(), out.data_ptr(),
                    in.nbytes() / static_cast<std::size_t>(transport_.world_size()));
  return to_device(out, device_);
}

AllToAllVResult AlgorithmEngine::all_to_all_v(const EngineCall& call, const Tensor& t,
                                              std::span<const std::int64_t> send_counts) {
  if (device_engine_) return device_engine_->all_to_all_v(call, t, send_counts);
  const auto w = static_cast<std::size_t>(transport_.world_size());
  std::vector<std::int64_t> recv_counts(w);
  exchange_counts(call.context.on(transport_), send_counts, recv_counts);
  const Tensor in = host_contiguous(t);
  Shape out_shape = in.shape();
  out_shape[0] = std::accumulate(recv_counts.begin(), recv_counts.end(), std::int64_t{0});
  Tensor out = Tensor::empty(out_shape, in.dtype());
  std::size_t row_bytes = dtype_size(in.dtype());
  for (std::int64_t d = 1; d < in.dim(); ++d) row_bytes *= static_cast<std::size_t>(in.shape()[d]);
  std::vector<std::size_t> send_off(w), send_bytes(w), recv_off(w), recv_bytes(w);
  std::size_t s = 0, r = 0;
  for (std::size_t j = 0; j < w; ++j) {
    send_off[j] = s;
    send_bytes[j] = static_cast<std::size_t>(send_counts[j]) * row_bytes;
    s += send_bytes[j];
    recv_off[j] = r;
    recv_bytes[j] = static_cast<std::size_t>(recv_counts[j]) * row_bytes;
    r += recv_bytes[j];
  }
  direct_all_to_all_v(AlgorithmContext{transport_, call.context.tag + 1, call.deadline()},
                      in.data_ptr(), send_off, send_bytes, out.data_ptr(), recv_off, recv_bytes);
  AllToAllVResult result;
  result.output = to_device(out, device_);
  result.recv_counts = std::move(recv_counts);
  return result;
}

}  // namespace ruccl
