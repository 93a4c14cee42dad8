#include "autodiff/nn/layer_norm.h"

#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/layer_norm.h"
#include "autodiff/ops/reduce.h"
#include "tensor/backend/backend.h"

namespace ruccl::nn {

void check_normalized_shape(const Var& x, const std::vector<std::int64_t>& normalized_shape,
                            const std::string& who) {
  const auto k = static_cast<std::int64_t>(normalized_shape.size());
  bool fits = x.dim() >= k;
  for (std::int64_t i = 0; fits && i < k; ++i) {
    fits = x.shape()[x.dim() - k + i] == normalized_shape[static_cast<std::size_t>(i)];
  }
  RUCCL_CHECK(
      fits, ShapeError, who, ": expected an input whose last ",
      k == 1 ? str("dim is ", normalized_shape[0]) : str(k, " dims are ", Shape(normalized_shape)),
      ", got ", x.shape());
}

LayerNorm::LayerNorm(std::vector<std::int64_t> normalized_shape, LayerNormOptions options)
    : shape_(std::move(normalized_shape)), eps_(options.eps), affine_(options.elementwise_affine) {
  const DType dtype = options.dtype;
  RUCCL_CHECK(is_floating(dtype), DTypeError, "LayerNorm: expected a floating dtype, got ", dtype);
  RUCCL_CHECK(!shape_.empty(), ValueError, "LayerNorm: expected a non-empty normalized_shape");
  if (affine_) {
    weight_ = register_parameter("weight", Param(Tensor::ones(Shape(shape_), dtype)));
    bias_ = register_parameter("bias", Param(Tensor::zeros(Shape(shape_), dtype)));
  }
}

Param& LayerNorm::weight() {
  RUCCL_CHECK(affine_, ValueError, "LayerNorm::weight: built without elementwise_affine");
  return param_at(weight_);
}

Param& LayerNorm::bias() {
  RUCCL_CHECK(affine_, ValueError, "LayerNorm::bias: built without elementwise_affine");
  return param_at(bias_);
}

Var LayerNorm::forward(const Var& x) {
  return layer_norm_forward(x, shape_, affine_ ? param_at(weight_).var() : Var(),
                            affine_ ? param_at(bias_).var() : Var(), eps_, describe());
}

Var layer_norm_forward(const Var& x, const std::vector<std::int64_t>& shape, const Var& weight,
                       const Var& bias, double eps, const std::string& who) {
  check_normalized_shape(x, shape, who);
  const auto k = static_cast<std::int64_t>(shape.size());
  const bool affine = weight.defined();
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError, who, ": expected a floating input, got ",
              x.dtype());
  RUCCL_CHECK(!affine || x.dtype() == weight.dtype(), DTypeError, who,
              ": expected an input of dtype ", weight.dtype(), " (the parameters'), got ",
              x.dtype());
  if (x.numel() > 0 && backend_for(x.value().device()).supports(Op::BatchNorm, x.dtype())) {
    // One fused op on batch norm's kernels (autodiff/ops/layer_norm.h).
    return autodiff::layer_norm(x, shape, weight, bias, eps);
  }
  // The composite (a backend without the kernels, F16/BF16, an empty input).
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < k; ++i) dims.push_back(x.dim() - k + i);
  using namespace autodiff;
  Var centered = sub(x, mean(x, dims, /*keepdim=*/true));
  Var variance = mean(mul(centered, centered), dims, /*keepdim=*/true);
  Var y = div(centered, sqrt(add(variance, eps)));
  if (affine) y = add(mul(y, weight), bias);
  return y;
}

}  // namespace ruccl::nn
