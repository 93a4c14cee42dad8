#pragma once
// CollectiveEngine: the seam between the Communicator core and what moves and reduces the bytes.
//
// The core (collective/core/communicator_core.h) validates every call's arguments, fingerprints it
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

#include "collective/algorithms/algorithm.h"
#include "collective/common/reduce_operation.h"
#include "collective/engine/engine_factory.h"
#include "collective/protocol/call_options.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// One agreed collective, as its engine sees it.
struct EngineCall {
  /// This rank's record: kind, dtype, shape, reduce op, root, the algorithm (Auto only for a
  /// broadcast, whose size non-roots learn from root's record) and the tree arity.
  const CallRecord& record;
  /// Every rank's record of this call (index = rank): valid once the call is agreed.
  std::span<const CallRecord> records;
  /// The call's label ("all_reduce", or CallOptions::label).
  const char* label;
  /// The group's transport, a message tag base unique to this call (the engine may use tags
  /// tag .. tag + 0xFFFF), the call's deadline and, when the engine said sends_with_agreement
  /// for this call, its agreement in flight: the engine must then call agreed() after posting
  /// its first sends, before its first receive. What our algorithms take (an engine that runs
  /// them over a transport of its own rebinds it: AlgorithmContext::on).
  AlgorithmContext context;

  Algorithm algorithm() const { return static_cast<Algorithm>(record.algorithm); }
  const Deadline& deadline() const { return context.deadline; }
  /// Whether the call's agreement is still in flight (see context).
  bool agreement_pending() const { return context.pending_agreement != nullptr; }
  /// Completes a pending agreement (throws on disagreement, failing the group); else nothing.
  void agreed() const { context.agreed(); }
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
  /// its agreement completes (EngineCall::agreement_pending): one exchange instead of two.
  virtual bool sends_with_agreement(OpKind kind, Algorithm algorithm) const {
    (void)kind;
    (void)algorithm;
    return false;
  }

  /// What a call must carry from the thread that made it to the thread that runs it (an *_async
  /// call, or a blocking call queued behind one, runs on the communicator's progress thread):
  /// called on the caller's thread when the call starts; the function it returns runs on the
  /// progress thread right before the call. A device engine carries the caller's current stream
  /// on the rank's device (cuda/collective/device_streams.h), so the call stays ordered after the
  /// kernels that made its input. Empty (the default): nothing to carry.
  virtual std::function<void()> caller_context() const { return {}; }

  /// The factory of the engine of a group split from this engine's group (Communicator::split),
  /// called on every rank of the parent, in the same order, after the split's colors and keys
  /// were agreed (a negative color: this rank joins no group, but a collective split such as
  /// ncclCommSplit still needs it). Empty (the default): the group's engine comes from the
  /// factory that made the parent's.
  virtual EngineFactory split_engine(int color, int key) {
    (void)color;
    (void)key;
    return {};
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

}  // namespace ruccl
