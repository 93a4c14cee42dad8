#pragma once
// CollectiveEngine: the seam between the Communicator core and what moves and reduces the bytes.
//
// The core (collective/communicator_core.h) validates every call's arguments, fingerprints it
// into a CallRecord, agrees on it with every rank over the transport (the control channel),
// enforces the deadline and turns any failure into the same CollectiveError on every rank. Only
// then does it hand the call to the group's engine, which runs it:
//   - AlgorithmEngine (algorithm_engine.h): our algorithms over the group's Transport (in
//     process, TCP, MPI point-to-point), with host staging; bit-identical results;
//   - MpiEngine: MPI's own collectives (RUCCL_WITH_MPI); NCCL's later.
// An engine never validates (the core did, on every rank) and never agrees; it may throw
// CollectiveError (Timeout, PeerLost, a failure of the group): the core fails the group with it.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "collective/call_options.h"
#include "collective/communicator.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// One agreed collective, as its engine sees it.
struct EngineCall {
  /// This rank's record: kind, dtype, shape, reduce op, root, the algorithm (Auto only for a
  /// broadcast, whose size non-roots learn from root's record) and the tree arity.
  const CallRecord& record;
  /// Every rank's record of this call (index = rank): valid once the call is agreed.
  std::span<const CallRecord> records;
  /// The call's label ("all_reduce", or CallOptions::label) and deadline.
  const char* label;
  const Deadline& deadline;
  /// A message tag base unique to this call: the engine may use tags tag .. tag + 0xFFFF.
  std::uint64_t tag;
  /// Set when the engine said sends_with_agreement for this call: its agreement is in flight,
  /// and the engine must call agreed() after posting its first sends, before its first receive.
  const FunctionRef<void()>* pending_agreement = nullptr;

  Algorithm algorithm() const { return static_cast<Algorithm>(record.algorithm); }
  /// Completes a pending agreement (throws on disagreement, failing the group); else nothing.
  void agreed() const {
    if (pending_agreement != nullptr) (*pending_agreement)();
  }
};

/// Runs agreed collectives for one rank. Inputs are the caller's tensors, already checked (defined,
/// on this rank's device, an allowed dtype and op, shapes that agree); results are new tensors on
/// that device. Inputs are never modified.
class CollectiveEngine {
 public:
  virtual ~CollectiveEngine() = default;

  /// "algorithms over tcp", "mpi", ...: for logs and error messages.
  virtual std::string name() const = 0;
  /// Whether this engine can run `kind` on `dtype` tensors of `device` (itself or through a
  /// fallback it holds). The core refuses a call it cannot run, on every rank, with a clear error.
  virtual bool supports(OpKind kind, DType dtype, Device device) const = 0;
  /// Whether reductions give bit-identical results on every rank and every run, in the canonical
  /// order (collective/algorithms/algorithm.h). MPI's reduction order is the implementation's.
  virtual bool bit_identical() const = 0;
  /// Whether a call of `kind` that the core resolved to `algorithm` posts its first sends before
  /// its agreement completes (EngineCall::pending_agreement): one exchange instead of two.
  virtual bool sends_with_agreement(OpKind kind, Algorithm algorithm) const {
    (void)kind;
    (void)algorithm;
    return false;
  }

  virtual Tensor all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) = 0;
  /// Root gets the result; other ranks nullopt.
  virtual std::optional<Tensor> reduce(const EngineCall& call, const Tensor& t, int root,
                                       ReduceOperation op) = 0;
  /// `t`'s axis 0 divides by the world size (checked).
  virtual Tensor reduce_scatter(const EngineCall& call, const Tensor& t, ReduceOperation op) = 0;
  /// `t` is root's tensor on root; elsewhere ignored (the result takes records[root]'s dtype and
  /// shape).
  virtual Tensor broadcast(const EngineCall& call, const Tensor& t, int root) = 0;
  virtual Tensor all_gather(const EngineCall& call, const Tensor& t) = 0;
  virtual std::optional<Tensor> gather(const EngineCall& call, const Tensor& t, int root) = 0;
  /// `t` is root's tensor on root; elsewhere ignored.
  virtual Tensor scatter(const EngineCall& call, const Tensor& t, int root) = 0;
  virtual Tensor all_to_all(const EngineCall& call, const Tensor& t) = 0;
  /// `send_counts` has one non-negative count per rank, summing to t's axis 0 (checked).
  virtual AllToAllVResult all_to_all_v(const EngineCall& call, const Tensor& t,
                                       std::span<const std::int64_t> send_counts) = 0;
};

// EngineFactory (communicator.h) makes the engine of one rank over the group's transport, which
// outlives the engine.

}  // namespace ruccl
