#pragma once
// fully_shard: fully sharded parameters (FSDP-style, per parameter), built on the differentiable
// all_gather alone (docs/training.md, "Fully sharded parameters"; docs/autodiff.md §11).
//
// Each parameter of a sharded module lives on rank r as rows [r·k, (r+1)·k) of its dim 0, with
// k = ceil(d0 / W), zero-padded to k rows (FSDP2's layout; a 0-d parameter counts as [1]). The
// Param keeps its identity (ParamId, ties, trainable) and its value becomes that [k, ...] shard,
// so optimizers, GradientsParams and checkpoints see the shards.
//
// The step of one FullyShard module, per call of forward:
//   gather    all_gather of every shard (one tape node each: forward all_gather, backward
//             reduce_scatter_sum, its transpose), narrowed to d0 rows and reshaped: the full value
//   compute   the wrapped module's forward, with each Param showing the full value
//   free      the full values' bytes are released (Storage::release) though the tape holds views
//   re-gather in backward, the node at the module's output refills them (all_gather again)
//             before any node of the module runs: a recompute-in-backward policy for the gather
//   reduce-scatter  after the module's last node, the full values are released again and each
//             gather node's backward sums the ranks' gradients into this rank's shard
// so a rank holds its shards plus the gathered modules in flight, and the gradients arrive
// sharded in each shard's grad() with no hook beside the tape.
//
// Gradient: the transpose gives d(Σ_r L_r)/d shard. set_gradient_weight(local, total) makes it
// DataParallel's weighted mean instead (g · local summed over the ranks, / total: the same
// operations as DataParallel::reduce, so the result is bit-identical to it at 2 ranks).
//
//   auto shards = nn::ShardedParams::create(comm);           // one per model: ties across modules
//   auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
//       nn::fully_shard(block0, comm, "block0", shards), nn::fully_shard(block1, comm, "block1",
//       shards)});
//   shards->set_gradient_weight(batch, world * batch);       // DataParallel's Mean weighting
//   cross_entropy(model->forward(x), y).backward();          // shard gradients in p.grad()
//
// Every rank must call the same sharded modules in the same order (the gathers are collectives
// whose fingerprint carries the module's name: a rank in another module raises CollectiveError on
// every rank, naming the module). Shard a model before cloning it: clone() of a FullyShard is a
// ValueError. The wrapped module is called through forward(const Var&).
#include <memory>
#include <string>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"

namespace ruccl::nn {

/// The sharded parameters of one model, shared by its FullyShard modules: a parameter tied
/// across two of them is sharded once. Holds the gradient weighting (set_gradient_weight).
class ShardedParams {
 public:
  struct Impl;
  /// A new, empty set over `comm`'s ranks.
  static std::shared_ptr<ShardedParams> create(const Communicator& comm);
  /// The backward of every gather scales this rank's full gradient by `local_factor`, sums it
  /// over the ranks into the shard and divides by `divisor` (DataParallel::reduce's weighting:
  /// local_factor = this rank's weight w_r for a Mean loss, 1 for a Sum loss; divisor = Σ w_r).
  /// The default (1, 1) is the plain transpose: the gradient of Σ_r L_r. ValueError for a
  /// divisor that is not positive.
  void set_gradient_weight(double local_factor, double divisor);
  /// The full (unsharded) shape of a sharded parameter; ValueError for one not sharded here.
  Shape full_shape(const Param& param) const;
  Impl& impl() { return *impl_; }

 private:
  ShardedParams() = default;
  std::shared_ptr<Impl> impl_;
};

/// A module whose parameters are sharded over the ranks (see the file comment). Its own
/// parameters and children are those of the wrapped module, under the same names, so paths and
/// ParamIds are the unwrapped module's.
class FullyShard : public Cloneable<FullyShard> {
 public:
  FullyShard(std::shared_ptr<Module> module, const Communicator& comm, std::string name,
             std::shared_ptr<ShardedParams> shards);
  /// Gathers the parameters, runs the wrapped module's forward, frees the gathered values.
  Var forward(const Var& x) override;
  /// The name given to fully_shard (in error messages and fingerprints).
  const std::string& name() const;
  /// The wrapped module.
  const std::shared_ptr<Module>& module() const;
  /// The sharded parameters (shared with the other modules of the model).
  const std::shared_ptr<ShardedParams>& shards() const;

  struct State;

 protected:
  std::shared_ptr<Module> shallow_copy() const override;

 private:
  std::shared_ptr<State> state_;
};

/// Shards `module`'s parameters (those not sharded yet in `shards`) over `comm` and returns the
/// module that gathers them in forward (see the file comment). `name` names the module in errors;
/// `shards` defaults to a new set (pass one set to every module of a model for tied parameters).
/// The module must hold the same values on every rank (as after DataParallel::initialize).
std::shared_ptr<FullyShard> fully_shard(std::shared_ptr<Module> module, const Communicator& comm,
                                        std::string name,
                                        std::shared_ptr<ShardedParams> shards = nullptr);

}  // namespace ruccl::nn
