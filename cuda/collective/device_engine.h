#pragma once
// DeviceEngine: how our algorithms run on CUDA tensors. An AlgorithmEngine of a rank on a CUDA
// device hands every call to it (register_device_engine, collective/engine/algorithm_engine.h;
// install_collectives() below registers it), so every group of the collective layer (in process,
// TCP, MPI point-to-point, the registered session API) moves device tensors this way:
//   - ranks that are threads of one process and can read each other's device memory (one GPU, or
//     peer access): PeerCollectives, device to device with the fold kernels, no host round trip;
//   - otherwise (TCP, MPI, GPUs without peer access): the input is copied to a pinned host buffer
//     in segments, and our algorithms run over a StagingTransport at once, so a segment already on
//     the host is on the wire while the next one is still being copied; the result goes back to
//     the device.
// Either way the reduction order is the canonical one: bit-identical to the CPU path.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "collective/engine/algorithm_engine.h"
#include "cuda/collective/device_streams.h"
#include "cuda/collective/peer_collectives.h"
#include "cuda/collective/staging_transport.h"
#include "cuda/memory/pinned_pool.h"

namespace ruccl::cuda {

/// A pinned host buffer (from the pinned pool, cuda/memory/pinned_pool.h), replaced by a larger one
/// when a call needs more, with the events of its last fill.
class PinnedStage {
 public:
  PinnedStage() = default;
  ~PinnedStage();
  PinnedStage(const PinnedStage&) = delete;
  PinnedStage& operator=(const PinnedStage&) = delete;

  /// Copies `nbytes` at device address `src` into the buffer in segments of `segment` bytes on
  /// `stream`, recording one event per segment (returned). Waits first for the previous fill.
  std::vector<cudaEvent_t> fill(const void* src, std::size_t nbytes, std::size_t segment,
                                cudaStream_t stream);
  void* data() const { return buffer_.data(); }

 private:
  PinnedBuffer buffer_;
  std::vector<cudaEvent_t> events_;
  std::size_t used_events_ = 0;
};

class DeviceEngine final : public CollectiveEngine {
 public:
  DeviceEngine(Transport& transport, Device device, const CommunicatorOptions& options);

  std::string name() const override { return "algorithms on cuda"; }
  bool supports(OpKind, DType, Device) const override { return true; }
  bool bit_identical() const override { return true; }
  /// The caller's current stream, carried to the progress thread (docs/collectives.md).
  std::function<void()> caller_context() const override { return carry_collective_stream(device_); }

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
  /// Whether this call runs device to device (in process, every rank reaching every other).
  bool peer_path(const EngineCall& call);
  /// `t` (undefined: nothing) as a CPU tensor over the pinned stage, filling in segments. With
  /// `overlap` false (or one rank) it waits for the whole copy before returning.
  Tensor stage(const EngineCall& call, const Tensor& t, bool overlap);
  /// Runs `body` on the staged input and brings its result back to the device.
  template <typename Body>
  auto staged(const EngineCall& call, const Tensor& t, bool overlap, Body&& body);

  Transport& transport_;
  Device device_;
  CommunicatorOptions options_;
  StagingTransport staging_;
  AlgorithmEngine host_;  // our algorithms on host memory, over staging_
  std::unique_ptr<PeerCollectives> peer_;
  PinnedStage pinned_;
};

/// The DeviceEngineFactory of DeviceEngine.
std::unique_ptr<CollectiveEngine> make_device_engine(Transport& transport, Device device,
                                                     const CommunicatorOptions& options);

/// Registers DeviceEngine for CUDA ranks and "nccl" for Communicator::from_env (idempotent). The
/// CUDA layer's install() calls it.
void install_collectives();

}  // namespace ruccl::cuda
