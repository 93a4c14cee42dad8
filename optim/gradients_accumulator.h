#pragma once
// GradientsAccumulator: gradients of several micro-batches, each with its own weight and loss
// reduction, folded into the gradient of the window's summed loss, so that one optimizer step
// sees the exact mean over every sample of the window (and, through DataParallel, of every rank).
//
//   for (micro-batch of n samples) {
//     model.zero_grad();
//     cross_entropy(model.forward(x), y).backward();            // a MEAN over its n samples
//     acc.accumulate(GradientsParams::from_module(model), n, LossReduction::Mean);
//   }
//   optimizer.step(lr, model, acc.mean());                       // one replica, or:
//   optimizer.step(lr, model, dp.reduce(model, acc.take()));     // data parallel
//
// Why the weight is part of the call: micro-batch k's gradient G_k is of a mean (or a sum) over
// its w_k samples; the window's mean loss has the gradient Σ_k c_k·G_k / Σ_k w_k with c_k = w_k
// for a mean and 1 for a sum. Summing the G_k of mean losses (what a plain sum does) gives K
// times the right gradient with K equal micro-batches, silently; uneven micro-batches would be
// weighted wrongly too.
#include <cstdint>
#include <map>

#include "autodiff/ops/loss.h"
#include "optim/checkpoint/tensor_blob.h"
#include "optim/gradients_params.h"

namespace ruccl::optim {

/// How a loss was reduced over its samples: the loss functions' own enum (Mean: the mean over
/// the samples, cross_entropy's default; Sum: their sum).
using LossReduction = autodiff::Reduction;

/// What an accumulation window holds when it is handed over (GradientsAccumulator::take).
struct AccumulatedGradients {
  /// Σ_k c_k·G_k per ParamId: the gradient of the window's loss summed over all its samples.
  GradientsParams sum;
  /// Σ_k w_k: the window's samples (or tokens).
  double weight = 0.0;
  /// How many micro-batches the window held (zero-weight ones included).
  std::int64_t micro_batches = 0;
};

/// An accumulator's pending window, for checkpoints.
struct AccumulatorState {
  std::int64_t micro_batches = 0;
  std::map<ParamId, TensorBlob> grads;  // the pending Σ_k c_k·G_k
  double weight = 0.0;                  // the pending Σ_k w_k

  template <class Archive>
  void serialize(Archive& archive) {
    archive(micro_batches, grads, weight);
  }
};

/// Folds weighted micro-batch gradients per ParamId. See the file comment.
class GradientsAccumulator {
 public:
  /// Adds micro-batch gradients `grads`, of a loss reduced as `loss` over `weight` samples or
  /// tokens (finite, >= 0), to the pending window. A zero-weight micro-batch (no samples on this
  /// rank) is counted and contributes nothing. ValueError for a bad weight; ShapeError /
  /// DTypeError when a gradient's shape or dtype differs from the pending one of its ParamId; a
  /// refused call changes nothing.
  void accumulate(const GradientsParams& grads, double weight, LossReduction loss);
  /// The pending window (its summed-loss gradient and its weight); the accumulator is empty
  /// afterwards. Hand it to DataParallel::reduce.
  AccumulatedGradients take();
  /// The window's mean gradient, Σ_k c_k·G_k / Σ_k w_k (what one replica steps with); the
  /// accumulator is empty afterwards. ValueError when the window's weight is 0.
  GradientsParams mean();
  /// How many accumulate() calls the pending window holds.
  std::int64_t micro_batches() const { return micro_batches_; }
  /// The pending window's weight Σ_k w_k.
  double weight() const { return weight_; }
  /// Whether nothing is pending.
  bool empty() const { return sums_.empty() && micro_batches_ == 0; }

  /// The pending state (copied to the host), for TrainingRecord.
  AccumulatorState state() const;
  /// Replaces the pending state with a saved one (tensors on `device`). CheckpointError for a
  /// malformed state.
  void load_state(const AccumulatorState& state, Device device = Device::cpu());

 private:
  std::map<ParamId, Tensor> sums_;
  double weight_ = 0.0;
  std::int64_t micro_batches_ = 0;
};

}  // namespace ruccl::optim
