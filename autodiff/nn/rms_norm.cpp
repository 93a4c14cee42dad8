#include "autodiff/nn/rms_norm.h"

#include "autodiff/nn/layer_norm.h"

#include <limits>

#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/reduce.h"

namespace ruccl::nn {

namespace {
/// torch.finfo(dtype).eps: the gap between 1 and the next representable value.
double machine_epsilon(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return std::numeric_limits<double>::epsilon();
    case DType::F16:
      return 0x1p-10;
    case DType::BF16:
      return 0x1p-7;
    default:
      return std::numeric_limits<float>::epsilon();
  }
}
}  // namespace

RMSNorm::RMSNorm(std::vector<std::int64_t> normalized_shape, RMSNormOptions options)
    : shape_(std::move(normalized_shape)), options_(options) {
  RUCCL_CHECK(!shape_.empty(), ValueError, "RMSNorm: expected a non-empty normalized_shape");
  RUCCL_CHECK(is_floating(options.dtype), DTypeError, "RMSNorm: expected a floating dtype, got ",
              options.dtype);
  RUCCL_CHECK(!options.eps || *options.eps >= 0.0, ValueError, "RMSNorm: expected eps >= 0, got ",
              options.eps.value_or(0.0));
  if (options.elementwise_affine) {
    weight_ = register_parameter("weight", Param(Tensor::ones(Shape(shape_), options.dtype)));
  }
}

Param& RMSNorm::weight() {
  RUCCL_CHECK(options_.elementwise_affine, ValueError, describe(),
              ": weight: built without elementwise_affine");
  return param_at(weight_);
}

Var RMSNorm::forward(const Var& x) {
  check_normalized_shape(x, shape_, describe());
  const auto k = static_cast<std::int64_t>(shape_.size());
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError, describe(), ": expected a floating input, got ",
              x.dtype());
  // The layer's dtype is its weight's (to(DType) converts it).
  RUCCL_CHECK(!options_.elementwise_affine || x.dtype() == param_at(weight_).dtype(), DTypeError,
              describe(), ": expected an input of dtype ",
              options_.elementwise_affine ? param_at(weight_).dtype() : x.dtype(),
              " (the layer's), got ", x.dtype());
  const double eps = options_.eps ? *options_.eps : machine_epsilon(x.dtype());
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < k; ++i) dims.push_back(x.dim() - k + i);
  using namespace autodiff;
  Var y = div(x, sqrt(add(mean(mul(x, x), dims, /*keepdim=*/true), eps)));
  if (options_.elementwise_affine) y = mul(y, param_at(weight_).var());
  return y;
}

}  // namespace ruccl::nn
