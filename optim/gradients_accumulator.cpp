#include "optim/gradients_accumulator.h"

#include "optim/checkpoint/checkpoint_error.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::optim {

void GradientsAccumulator::accumulate(const GradientsParams& grads) {
  // Validate everything first, so a bad call leaves the pending sums unchanged.
  for (const auto& [id, g] : grads.entries()) {
    const auto it = sums_.find(id);
    if (it == sums_.end()) continue;
    RUCCL_CHECK(g.shape() == it->second.shape(), ShapeError,
                "GradientsAccumulator::accumulate: "
                "expected shape ",
                it->second.shape(), " for ParamId ", id, ", got ", g.shape());
    RUCCL_CHECK(g.dtype() == it->second.dtype(), DTypeError,
                "GradientsAccumulator::accumulate: "
                "expected dtype ",
                it->second.dtype(), " for ParamId ", id, ", got ", g.dtype());
  }
  for (const auto& [id, g] : grads.entries()) {
    auto it = sums_.find(id);
    if (it == sums_.end()) {
      sums_.emplace(id, g.clone());
    } else {
      it->second = add(it->second, g);
    }
  }
  ++micro_batches_;
}

GradientsParams GradientsAccumulator::grads() {
  GradientsParams out;
  for (auto& [id, sum] : sums_) out.insert(id, std::move(sum));
  sums_.clear();
  micro_batches_ = 0;
  return out;
}

AccumulatorState GradientsAccumulator::state() const {
  AccumulatorState out;
  out.micro_batches = micro_batches_;
  for (const auto& [id, sum] : sums_) out.grads.emplace(id, TensorBlob::from_tensor(sum));
  return out;
}

void GradientsAccumulator::load_state(const AccumulatorState& state, Device device) {
  RUCCL_CHECK(state.micro_batches >= 0, CheckpointError,
              "GradientsAccumulator::load_state: "
              "expected a micro-batch count >= 0, got ",
              state.micro_batches);
  std::map<ParamId, Tensor> sums;
  for (const auto& [id, blob] : state.grads) sums.emplace(id, blob.to_tensor(device));
  sums_ = std::move(sums);
  micro_batches_ = state.micro_batches;
}

}  // namespace ruccl::optim
