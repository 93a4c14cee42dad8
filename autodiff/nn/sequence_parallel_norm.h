#pragma once
// LayerNorm in a sequence-parallel region (Megatron-LM's sequence parallelism): each rank of the
// tensor-parallel group normalises its own block of the sequence, with weights replicated over the
// group. Their gradient is the sum of every block's contribution, so they enter the per-rank
// computation through copy_to_region (backward all_reduce_sum): the gradient is whole and
// bit-identical on every rank with no hand-written all-reduce (the gradients that differed across
// ranks in Megatron-LM#1446).
//
//   Var s = nn::RowParallelLinear(4 * E, E, tp, gen, {.sequence_parallel = true})(h);  // block
//   Var y = nn::SequenceParallelLayerNorm(E, tp)(s);           // still this rank's block
#include <cstdint>
#include <vector>

#include "autodiff/nn/layer_norm.h"
#include "collective/communicator.h"

namespace ruccl::nn {

/// nn::LayerNorm (same options, parameters "weight" ones and "bias" zeros, replicated) for an
/// input that is this rank's block of the sequence: the weights enter through copy_to_region.
/// Equals LayerNorm on the gathered sequence, block by block, and its weights' gradients equal
/// LayerNorm's on the whole sequence.
class SequenceParallelLayerNorm : public Cloneable<SequenceParallelLayerNorm> {
 public:
  SequenceParallelLayerNorm(std::vector<std::int64_t> normalized_shape, Communicator comm,
                            LayerNormOptions options = {});
  SequenceParallelLayerNorm(std::int64_t normalized_size, Communicator comm,
                            LayerNormOptions options = {})
      : SequenceParallelLayerNorm(std::vector<std::int64_t>{normalized_size}, std::move(comm),
                                  options) {}
  Var forward(const Var& x) override;
  /// ValueError without elementwise_affine.
  Param& weight();
  Param& bias();
  Communicator& communicator() { return comm_; }
  void set_communicator(Communicator comm) { comm_ = std::move(comm); }

 private:
  Communicator comm_;
  std::vector<std::int64_t> shape_;
  LayerNormOptions options_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

}  // namespace ruccl::nn
