#pragma once
// AlgorithmEngine: the engine that runs our own algorithms (collective/algorithms/) over the
// group's Transport — in process, TCP, MPI point-to-point or the fault-injecting wrapper. It stages
// tensors on the host once (a contiguous CPU copy of a device tensor, the accumulation dtype of a
// reduction), runs the algorithm the call agreed on, and brings the result back to the rank's
// device. Reductions follow the canonical order (algorithm.h): results are bit-identical on every
// rank, every run, whatever the algorithm.
//
// A rank on a device whose library registered a device engine (register_device_engine: the CUDA
// layer registers one, cuda/collective/device_engine.h) hands every call to that engine instead:
// it moves device memory itself (device to device in process; pinned, segmented host staging over
// a copying transport) and keeps the same reduction order. Without one, device tensors are staged
// on the host here.
#include <memory>

#include "collective/engine/collective_engine.h"

namespace ruccl {

class AlgorithmEngine final : public CollectiveEngine {
 public:
  /// `host_only`: never hand calls to a registered device engine (that engine's own fallback).
  AlgorithmEngine(Transport& transport, Device device, const CommunicatorOptions& options,
                  bool host_only = false);

  std::string name() const override;
  bool supports(OpKind kind, DType dtype, Device device) const override;
  bool bit_identical() const override { return true; }
  /// Direct all_reduce sends its inputs with the record: one exchange for a small all_reduce.
  bool sends_with_agreement(OpKind kind, Algorithm algorithm) const override;
  /// The registered device engine's (its stream); nothing for host staging.
  std::function<void()> caller_context() const override {
    return device_engine_ ? device_engine_->caller_context() : std::function<void()>();
  }

  Tensor all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) override;
  std::optional<Tensor> reduce(const EngineCall& call, const Tensor& t, int root,
                               ReduceOperation op) override;
  Tensor reduce_scatter(const EngineCall& call, const Tensor& t, ReduceOperation op) override;
  Tensor broadcast(const EngineCall& call, const Tensor& t, int root) override;
  Tensor all_gather(const EngineCall& call, const Tensor& t) override;
  std::optional<Tensor> gather(const EngineCall& call, const Tensor& t, int root) override;
  Tensor scatter(const EngineCall& call, const Tensor& t, int root) override;
  Tensor all_to_all(const EngineCall& call, const Tensor& t) override;
  AllToAllVResult all_to_all_v(const EngineCall& call, const Tensor& t,
                               std::span<const std::int64_t> send_counts) override;

 private:
  Transport& transport_;
  Device device_;
  CommunicatorOptions options_;
  std::unique_ptr<CollectiveEngine> device_engine_;  // null: host staging here
};

/// Makes the engine of a rank on a device of one type (the device library's collectives).
using DeviceEngineFactory = std::unique_ptr<CollectiveEngine> (*)(
    Transport& transport, Device device, const CommunicatorOptions& options);
/// Registers (or, with nullptr, removes) the device engine AlgorithmEngines of ranks on `type`
/// make from now on. Safe from any thread; engines made before keep theirs.
void register_device_engine(DeviceType type, DeviceEngineFactory factory);

/// The EngineFactory of AlgorithmEngine: what every group uses unless told otherwise.
std::unique_ptr<CollectiveEngine> make_algorithm_engine(Transport& transport, Device device,
                                                        const CommunicatorOptions& options);

/// A contiguous CPU tensor with the same values (t itself when it already is one).
Tensor host_contiguous(const Tensor& t);
/// The dtype a reduction of `dtype` accumulates in (F16/BF16 -> F32, others unchanged).
DType accumulation_dtype(DType dtype);

}  // namespace ruccl
