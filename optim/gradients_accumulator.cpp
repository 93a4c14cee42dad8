#include "optim/gradients_accumulator.h"

#include <cmath>

#include "optim/checkpoint/checkpoint_error.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::optim {

void GradientsAccumulator::accumulate(const GradientsParams& grads, double weight,
                                      LossReduction loss) {
  // Validate everything first, so a bad call leaves the pending window unchanged.
  RUCCL_CHECK(std::isfinite(weight) && weight >= 0.0, ValueError,
              "GradientsAccumulator::accumulate: expected a finite weight >= 0 (the micro-batch's "
              "samples or tokens), got ",
              weight);
  for (const auto& [id, g] : grads.entries()) {
    const auto it = sums_.find(id);
    if (it == sums_.end()) continue;
    RUCCL_CHECK(g.shape() == it->second.shape(), ShapeError,
                "GradientsAccumulator::accumulate: expected shape ", it->second.shape(),
                " for ParamId ", id, ", got ", g.shape());
    RUCCL_CHECK(g.dtype() == it->second.dtype(), DTypeError,
                "GradientsAccumulator::accumulate: expected dtype ", it->second.dtype(),
                " for ParamId ", id, ", got ", g.dtype());
  }
  ++micro_batches_;
  if (weight == 0.0) return;  // no samples: its gradient (if any) is not part of the mean
  // c_k: the gradient of a mean over w_k samples is 1/w_k of the gradient of their sum.
  const bool scale = loss == LossReduction::Mean && weight != 1.0;
  for (const auto& [id, g] : grads.entries()) {
    Tensor term = scale ? mul(g, weight) : g;
    auto it = sums_.find(id);
    if (it == sums_.end()) {
      sums_.emplace(id, scale ? std::move(term) : term.clone());
    } else {
      it->second = add(it->second, term);
    }
  }
  weight_ += weight;
}

AccumulatedGradients GradientsAccumulator::take() {
  AccumulatedGradients out;
  for (auto& [id, sum] : sums_) out.sum.insert(id, std::move(sum));
  out.weight = weight_;
  out.micro_batches = micro_batches_;
  sums_.clear();
  weight_ = 0.0;
  micro_batches_ = 0;
  return out;
}

GradientsParams GradientsAccumulator::mean() {
  RUCCL_CHECK(weight_ > 0.0, ValueError,
              "GradientsAccumulator::mean: expected a window with a positive weight, got ", weight_,
              " over ", micro_batches_, " micro-batch(es)");
  AccumulatedGradients window = take();
  GradientsParams out;
  for (const auto& [id, sum] : window.sum.entries()) out.insert(id, div(sum, window.weight));
  return out;
}

AccumulatorState GradientsAccumulator::state() const {
  AccumulatorState out;
  out.micro_batches = micro_batches_;
  out.weight = weight_;
  for (const auto& [id, sum] : sums_) out.grads.emplace(id, TensorBlob::from_tensor(sum));
  return out;
}

void GradientsAccumulator::load_state(const AccumulatorState& state, Device device) {
  RUCCL_CHECK(state.micro_batches >= 0, CheckpointError,
              "GradientsAccumulator::load_state: expected a micro-batch count >= 0, got ",
              state.micro_batches);
  RUCCL_CHECK(std::isfinite(state.weight) && state.weight >= 0.0, CheckpointError,
              "GradientsAccumulator::load_state: expected a finite weight >= 0, got ",
              state.weight);
  std::map<ParamId, Tensor> sums;
  for (const auto& [id, blob] : state.grads) sums.emplace(id, blob.to_tensor(device));
  sums_ = std::move(sums);
  weight_ = state.weight;
  micro_batches_ = state.micro_batches;
}

}  // namespace ruccl::optim
