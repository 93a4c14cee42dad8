#pragma once
// GradientsParams: the gradients of one backward pass, keyed by ParamId (plain Tensors, no tape).
//
//   loss.backward();
//   GradientsParams grads = GradientsParams::from_module(model);
//   grads = grads.all_reduce_with(comm, ReduceOperation::Mean);   // every rank, same order
//   optimizer.step(lr, model, grads);
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"
#include "optim/replica_values.h"
#include "tensor/core/tensor.h"

namespace ruccl::optim {

using nn::ParamId;

/// ParamId -> gradient Tensor, iterated in ascending ParamId order.
class GradientsParams {
 public:
  GradientsParams() = default;

  /// The gradients that `model`'s trainable parameters hold after backward (each tied parameter
  /// once; parameters without a gradient are absent), with each parameter's path for messages.
  /// The tensors are shared, not copied. The parameters' values are kept too (shared) for
  /// all_reduce_with's check that the replicas agree.
  static GradientsParams from_module(const nn::Module& model);

  /// The gradient of `id`, or std::nullopt.
  std::optional<Tensor> get(ParamId id) const;
  /// Whether `id` has a gradient.
  bool contains(ParamId id) const { return grads_.count(id) != 0; }
  /// Sets (or replaces) the gradient of `id`. ValueError for an undefined tensor.
  void insert(ParamId id, Tensor grad);
  /// Removes and returns the gradient of `id` (std::nullopt when there was none).
  std::optional<Tensor> remove(ParamId id);
  /// The module path of `id`'s parameter as from_module recorded it (all_reduce_with keeps it),
  /// or "" when unknown (inserted by hand). Used to name parameters in messages.
  std::string path(ParamId id) const;
  /// Number of gradients.
  std::size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }
  /// The ParamIds, ascending.
  std::vector<ParamId> ids() const;
  /// The gradients in ascending ParamId order.
  const std::map<ParamId, Tensor>& entries() const { return grads_; }

  /// Reduces every gradient over the ranks of `comm` (one all_reduce per ParamId, in ascending
  /// ParamId order, so registration order never matters) and returns the results; this object is
  /// unchanged. Every rank must hold the same ParamIds with the same shapes and dtypes: a path
  /// whose ParamId differs between ranks or a missing gradient (ArgumentMismatch), a shape
  /// (ShapeMismatch) or dtype (DTypeMismatch) difference on any rank raises CollectiveError on
  /// every rank, naming the ParamId, its path when known, the ranks and how to fix it, before any
  /// gradient is reduced; the communicator stays usable after such an error.
  /// The first call for a model (GradientsParams made by from_module; once per process and
  /// model) also checks that every rank's parameters hold the same values (a fingerprint per
  /// parameter, one extra exchange): replicas that differ, such as ones built on plain threads
  /// from the process's default generator, raise CollectiveError(ArgumentMismatch) on every rank
  /// naming the first differing parameter and the ranks, before any gradient is reduced.
  GradientsParams all_reduce_with(Communicator& comm, ReduceOperation op) const;

 private:
  std::map<ParamId, Tensor> grads_;
  std::map<ParamId, std::string> paths_;  // only the known ones
  ReplicaValues values_;                  // from_module's parameters, for the first check
};

}  // namespace ruccl::optim
