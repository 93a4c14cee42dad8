#include "autodiff/nn/sequence_parallel_norm.h"

#include "autodiff/collective/region_ops.h"

namespace ruccl::nn {

SequenceParallelLayerNorm::SequenceParallelLayerNorm(std::vector<std::int64_t> normalized_shape,
                                                     Communicator comm, LayerNormOptions options)
    : comm_(std::move(comm)), shape_(std::move(normalized_shape)), options_(options) {
  // The one-rank LayerNorm checks the options and makes the (replicated) initial weights.
  LayerNorm full(shape_, options);
  if (options.elementwise_affine) {
    weight_ = register_parameter("weight", Param(full.weight().value()));
    bias_ = register_parameter("bias", Param(full.bias().value()));
  }
}

Param& SequenceParallelLayerNorm::weight() {
  RUCCL_CHECK(options_.elementwise_affine, ValueError, describe(),
              "::weight: built without elementwise_affine");
  return param_at(weight_);
}

Param& SequenceParallelLayerNorm::bias() {
  RUCCL_CHECK(options_.elementwise_affine, ValueError, describe(),
              "::bias: built without elementwise_affine");
  return param_at(bias_);
}

Var SequenceParallelLayerNorm::forward(const Var& x) {
  namespace dc = autodiff::collective;
  const bool affine = options_.elementwise_affine;
  return layer_norm_forward(x, shape_, affine ? dc::copy_to_region(weight().var(), comm_) : Var(),
                            affine ? dc::copy_to_region(bias().var(), comm_) : Var(), options_.eps,
                            describe());
}

}  // namespace ruccl::nn
