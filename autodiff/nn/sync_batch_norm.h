#pragma once
// SyncBatchNorm: batch normalisation whose batch statistics cover every rank's samples, built from
// the differentiable collectives (autodiff/collective/), so its backward comes from the tape.
#include <cstdint>

#include "autodiff/nn/batch_norm.h"
#include "collective/communicator.h"

namespace ruccl::nn {

/// Batch normalisation over the samples of every rank of a Communicator (torch.nn.SyncBatchNorm),
/// for [N, C, ...] inputs. In training mode each rank contributes its own N (ranks may hold
/// different numbers of samples, none included) and the statistics are those of all the ranks'
/// samples together: with W ranks each holding part of a batch, the outputs are BatchNorm's on
/// the whole batch, and so are the gradients (the objective being the sum of the ranks' losses,
/// docs/autodiff.md). Evaluation mode uses the running statistics, which every rank updates
/// identically, and communicates nothing.
///
/// Training mode issues three collectives per call, the same on every rank: an all_reduce of the
/// sample counts (I64, exact), an autodiff all_reduce_sum of the per-channel sums, then one of
/// the per-channel sums of squared deviations from the global mean (two passes, so a large mean
/// does not cancel the variance's digits as sum(x^2) - N mean^2 would). Backward runs the two
/// all_reduce_sum nodes' transposes (all_reduce_sum again): nothing is written by hand.
///
///   // on rank r's thread, comm its Communicator:
///   nn::SyncBatchNorm bn(16, comm);
///   Var y = bn(x_r);                // x_r [N_r, 16, ...]
class SyncBatchNorm : public Cloneable<SyncBatchNorm, BatchNormBase> {
 public:
  SyncBatchNorm(std::int64_t num_features, Communicator comm, BatchNormOptions options = {});
  Var forward(const Var& x) override;
  /// The communicator the statistics are reduced over. A clone() shares it: give each rank's
  /// replica its own with set_communicator.
  Communicator& communicator() { return comm_; }
  void set_communicator(Communicator comm) { comm_ = std::move(comm); }

 protected:
  BatchStatistics batch_statistics(const Var& x) override;
  bool local_statistics() const override { return false; }

 private:
  Communicator comm_;
};

}  // namespace ruccl::nn
