#pragma once
// GradientsAccumulator: sums the gradients of several micro-batches before one optimizer step.
//
//   for (micro-batch) { loss.backward(); acc.accumulate(GradientsParams::from_module(model));
//                       model.zero_grad(); }
//   optimizer.step(lr, model, acc.grads());   // the sum; the accumulator is empty again
#include <cstdint>
#include <map>

#include "optim/checkpoint/tensor_blob.h"
#include "optim/gradients_params.h"

namespace ruccl::optim {

/// An accumulator's pending gradients, for checkpoints.
struct AccumulatorState {
  std::int64_t micro_batches = 0;
  std::map<ParamId, TensorBlob> grads;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(micro_batches, grads);
  }
};

/// Sums micro-batch gradients per ParamId. See the file comment.
class GradientsAccumulator {
 public:
  /// Adds `grads` to the pending sums (a ParamId seen for the first time starts at its gradient,
  /// copied). ShapeError / DTypeError when a gradient's shape or dtype differs from the pending
  /// sum of its ParamId.
  void accumulate(const GradientsParams& grads);
  /// The pending sums; the accumulator is empty afterwards.
  GradientsParams grads();
  /// How many accumulate() calls the pending sums hold.
  std::int64_t micro_batches() const { return micro_batches_; }
  /// Whether nothing is pending.
  bool empty() const { return sums_.empty() && micro_batches_ == 0; }

  /// The pending state (copied to the host), for TrainingRecord.
  AccumulatorState state() const;
  /// Replaces the pending state with a saved one (tensors on `device`). CheckpointError for a
  /// malformed state.
  void load_state(const AccumulatorState& state, Device device = Device::cpu());

 private:
  std::map<ParamId, Tensor> sums_;
  std::int64_t micro_batches_ = 0;
};

}  // namespace ruccl::optim
