#pragma once
// ReplicaValues: the parameter values one rank's replica holds, as one fingerprint per parameter,
// so that the first GradientsParams::all_reduce_with of a model can check that every rank trains
// the same replica (replicas built on plain threads from the process's default generator draw
// interleaved numbers and differ; all-reducing their gradients would train divergent models).
// Checked once per model: the model is known by its first parameter (a weak reference, so a
// model built later at the same address is checked again).
#include <map>
#include <memory>
#include <string>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"
#include "tensor/core/tensor.h"

namespace ruccl::optim {

/// The values of a replica's trainable parameters (shared, not copied), keyed by ParamId.
class ReplicaValues {
 public:
  ReplicaValues() = default;

  /// Records `value` as the parameter `id`'s, and `key` (the parameter's Var) as the model's
  /// identity when it is the first.
  void add(nn::ParamId id, const Tensor& value, const std::shared_ptr<const void>& key);
  /// Whether values are known and this model was not yet checked in this process.
  bool needs_check() const;
  /// Checks, on every rank at once (collectives: every rank must call it together, ranks with
  /// no values included), that every parameter known on two ranks holds the same bytes; then
  /// marks this model checked. Otherwise throws CollectiveError(ArgumentMismatch) on every rank,
  /// naming the first differing parameter (lowest ParamId, its path from `paths` when known)
  /// and the ranks. `label` names the operation in the message.
  void check_same_on_every_rank(Communicator& comm, const std::map<nn::ParamId, std::string>& paths,
                                const char* label) const;

 private:
  std::map<nn::ParamId, Tensor> values_;
  std::weak_ptr<const void> key_;
};

/// FNV-1a 64 of a tensor's values in row-major order (copied to the host when on a device).
std::uint64_t value_fingerprint(const Tensor& t);

}  // namespace ruccl::optim
