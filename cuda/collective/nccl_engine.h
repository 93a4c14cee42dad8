#pragma once
// NcclEngine: each agreed collective of a group of CUDA ranks through NCCL (one rank per GPU: in
// separate processes, NcclGroup::connect / from_env, or one process driving several GPUs,
// NcclGroup::create). The Communicator core still validates and agrees on every call over the
// group's control channel (TCP, or in process) before NCCL sees it; the engine then enqueues the
// NCCL call on the rank's stream and waits for it, polling the stream's event and
// ncclCommGetAsyncError against the call's deadline and the control channel's failure:
//   - the deadline expires            -> ncclCommAbort, Timeout;
//   - the control channel fails (a peer process died: PeerLost; abort(): Aborted; any rank's
//     error)                            -> ncclCommAbort, that failure;
//   - NCCL reports an error            -> ncclCommAbort, nccl_error_kind (PeerLost for a remote or
//     system error).
// The core then fails the group over the control channel, so every other rank's wait sees it and
// aborts its communicator too: the same CollectiveError kind everywhere, never a hang.
//
// What NCCL runs: every data movement (as bytes, any dtype), and reductions of F16, BF16, F32,
// F64, I32, I64 with Sum, Prod, Min, Max and Mean (ncclAvg). Bitwise reductions (NCCL has none)
// run our algorithms over the control channel instead (the fallback, staged on the host).
// gather, scatter, all_to_all and all_to_all_v (after an exchange of the counts) are grouped
// ncclSend/ncclRecv, so any NCCL since 2.7 serves (ncclGather/ncclScatter/ncclAlltoAll are 2.28's).
// NCCL's reduction order is its own (it depends on the topology and algorithm): bit_identical() is
// false, unless CommunicatorOptions::require_bit_identical, which sends every reduction to the
// fallback.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "collective/engine/algorithm_engine.h"
#include "cuda/collective/device_streams.h"
#include "cuda/collective/nccl_comm.h"

namespace ruccl::cuda {

class NcclEngine final : public CollectiveEngine {
 public:
  NcclEngine(Transport& control, Device device, const CommunicatorOptions& options,
             std::shared_ptr<NcclComm> comm);
  ~NcclEngine() override;

  std::string name() const override { return "nccl"; }
  /// CUDA tensors of every dtype (what NCCL cannot reduce runs on the fallback); nothing else.
  bool supports(OpKind kind, DType dtype, Device device) const override;
  bool bit_identical() const override { return options_.require_bit_identical; }
  /// The caller's current stream, carried to the progress thread (docs/collectives.md).
  std::function<void()> caller_context() const override { return carry_collective_stream(device_); }
  /// A group's engine runs on the communicator ncclCommSplit makes of this one (every rank of
  /// the parent calls it, in order: Communicator::split).
  EngineFactory split_engine(int color, int key) override;

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

  /// Whether NCCL itself runs this reduction (else the fallback).
  bool native_reduction(DType dtype, ReduceOperation op) const;

 private:
  /// Issues `enqueue` (an NCCL call on stream_), waits until NCCL accepted it and until the
  /// stream passed it: the failure handling of the file comment. `what` names the NCCL call.
  template <typename Enqueue>
  void run(const EngineCall& call, const char* what, Enqueue&& enqueue);
  [[noreturn]] void fail(ncclResult_t result, const EngineCall& call, const char* what);
  /// One point-to-point move of a grouped call.
  struct Transfer {
    int peer;
    bool send;
    void* data;
    std::size_t nbytes;
  };
  /// ncclGroupStart, the moves (empty ones skipped), ncclGroupEnd: the first failure.
  ncclResult_t grouped(const std::vector<Transfer>& moves);

  Transport& control_;
  Device device_;
  CommunicatorOptions options_;
  std::shared_ptr<NcclComm> comm_;
  cudaStream_t stream_ = nullptr;  // set by run() for the call in progress
  cudaEvent_t done_ = nullptr;
  AlgorithmEngine fallback_;
};

}  // namespace ruccl::cuda
