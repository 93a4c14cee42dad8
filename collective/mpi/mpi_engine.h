#pragma once
// MpiEngine: each agreed collective through MPI's own non-blocking collective on the group's
// collective communicator (MPI_Iallreduce, MPI_Ireduce, MPI_Ireduce_scatter_block, MPI_Ibcast,
// MPI_Iallgather, MPI_Igather, MPI_Iscatter, MPI_Ialltoall, MPI_Ialltoallv), so the cluster's
// tuned collectives and fabric move the bytes, polled against the call's deadline and the failure
// notices (MpiTransport::wait). The core agrees on every call over the MpiTransport first.
//
// An all_reduce of at most MpiTransportOptions::fused_all_reduce_bytes (in its accumulation
// dtype, any dtype) is one exchange instead: every rank's record with its data behind it to every
// peer (MpiTransport::send_record_with), then, once every record agreed, every rank folds all
// inputs in the canonical order (bit-identical on every rank and to our algorithms). A larger
// one of F32/F64/I32/I64 in a group of at most MpiTransportOptions::kPairwiseMaxWorld ranks runs
// our pairwise reduce-scatter + all-gather on MPI messages of the collective communicator
// (pairwise_all_reduce_bytes; measured faster than MPI_Iallreduce: docs/performance-history.md,
// "MPI engine: three all_reduce paths").
//
// Falls back to our algorithms over MPI point-to-point (AlgorithmEngine over the same
// MpiTransport) for:
//   - reductions of F16 and BF16 (MPI has no such types; ours accumulate in F32) and of Bool;
//   - every reduction when CommunicatorOptions::require_bit_identical is set (MPI's reduction
//     order is the implementation's; ours is canonical): bit_identical() is then true;
//   - a message of more than INT_MAX elements or bytes (MPI counts are int);
//   - an all_reduce or reduce with a fold window (CallOptions::with_fold_window) that our
//     fused or pairwise paths do not take (those fold in the window's chunks themselves).
// Data movement (broadcast, gathers, scatter, all-to-all) is exact in every dtype: always MPI's.
// Mean is MPI's Sum, then divided by the world size here. CommunicatorOptions' algorithms choose
// among our algorithms only (the fallback); MPI's own collectives choose theirs.
#include <memory>

#include "collective/engine/algorithm_engine.h"
#include "collective/mpi/mpi_transport.h"

namespace ruccl {

class MpiEngine final : public CollectiveEngine {
 public:
  MpiEngine(MpiTransport& transport, Device device, const CommunicatorOptions& options);

  std::string name() const override { return "mpi"; }
  /// Every collective of every dtype (F16/BF16 reductions through the fallback), staged on the
  /// host from any device.
  bool supports(OpKind kind, DType dtype, Device device) const override;
  /// True only with require_bit_identical (every reduction then runs our algorithms).
  bool bit_identical() const override { return options_.require_bit_identical; }
  /// The fallback's (a Direct all_reduce sends with its record); MPI's own calls complete the
  /// agreement before they start.
  bool sends_with_agreement(OpKind kind, Algorithm algorithm) const override;

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

  /// Whether a reduction of `dtype` with `count` elements runs on MPI (else the fallback).
  bool native_reduction(DType dtype, std::int64_t count) const;
  /// Whether this all_reduce runs fused (MpiTransportOptions::fused_all_reduce_bytes): decided
  /// from the record alone, so alike on every rank whose record agrees.
  bool fused(const EngineCall& call) const;

  /// The largest fused all_reduce, whatever the option says (an MPI count is an int).
  static constexpr std::size_t kMaxFusedBytes = std::size_t{64} << 20;

 private:
  /// One exchange: this rank's record with its input behind it to every peer, then every rank
  /// folds every input in the canonical order.
  Tensor fused_all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op);
  /// Pairwise reduce-scatter (rank r folds chunk r of every input, canonical order) then
  /// all-gather of the folded chunks, on MPI_Isend/MPI_Irecv of the collective communicator.
  Tensor pairwise_all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op);
  /// Completes the agreement, checking that no peer sent data with its record.
  void agreed(const EngineCall& call);
  /// Waits for `request` (MpiTransport::wait); `in` and `out` stay alive with it on failure.
  void wait(MPI_Request request, const Tensor& in, const Tensor& out, const EngineCall& call,
            const char* what);

  MpiTransport& transport_;
  Device device_;
  CommunicatorOptions options_;
  AlgorithmEngine fallback_;
  std::vector<MPI_Request> requests_;  // pairwise_all_reduce's
};

/// The EngineFactory of MpiEngine: the transport must be an MpiTransport (else InvalidConfig).
std::unique_ptr<CollectiveEngine> make_mpi_engine(Transport& transport, Device device,
                                                  const CommunicatorOptions& options);

}  // namespace ruccl
