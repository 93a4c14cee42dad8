#include "autodiff/nn/group_norm.h"

#include <vector>

#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/shape.h"

namespace ruccl::nn {

GroupNorm::GroupNorm(std::int64_t num_groups, std::int64_t num_channels, GroupNormOptions options)
    : groups_(num_groups), channels_(num_channels), options_(options) {
  RUCCL_CHECK(num_groups > 0 && num_channels > 0, ValueError,
              "GroupNorm: expected num_groups > 0 and num_channels > 0, got ", num_groups, " and ",
              num_channels);
  RUCCL_CHECK(num_channels % num_groups == 0, ValueError,
              "GroupNorm: expected num_channels divisible by num_groups, got ", num_channels,
              " channels and ", num_groups, " groups");
  RUCCL_CHECK(is_floating(options.dtype), DTypeError, "GroupNorm: expected a floating dtype, got ",
              options.dtype);
  if (options.affine) {
    const Shape shape{num_channels};
    weight_ = register_parameter("weight", Param(Tensor::ones(shape, options.dtype)));
    bias_ = register_parameter("bias", Param(Tensor::zeros(shape, options.dtype)));
  }
}

Param& GroupNorm::weight() {
  RUCCL_CHECK(options_.affine, ValueError, describe(), ": weight: built without affine");
  return param_at(weight_);
}

Param& GroupNorm::bias() {
  RUCCL_CHECK(options_.affine, ValueError, describe(), ": bias: built without affine");
  return param_at(bias_);
}

Var GroupNorm::forward(const Var& x) {
  RUCCL_CHECK(x.dim() >= 2 && x.shape()[1] == channels_, ShapeError, describe(),
              ": expected an input [N, ", channels_, ", ...], got ", x.shape());
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError, describe(), ": expected a floating input, got ",
              x.dtype());
  // The layer's dtype is its weight's (to(DType) converts it).
  RUCCL_CHECK(!options_.affine || x.dtype() == param_at(weight_).dtype(), DTypeError, describe(),
              ": expected an input of dtype ",
              options_.affine ? param_at(weight_).dtype() : x.dtype(), " (the layer's), got ",
              x.dtype());
  using namespace autodiff;
  const std::int64_t n = x.shape()[0];
  // [N, G, C/G * prod(rest)]: each row of the last dim is one sample's group.
  Var grouped = reshape(x, Shape{n, groups_, -1});
  Var centered = sub(grouped, mean(grouped, 2, /*keepdim=*/true));
  Var variance = mean(mul(centered, centered), 2, /*keepdim=*/true);
  Var y = reshape(div(centered, sqrt(add(variance, options_.eps))), x.shape());
  if (options_.affine) {
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(x.dim()), 1);
    sizes[1] = channels_;
    const Shape per_channel(sizes);
    y = add(mul(y, reshape(param_at(weight_).var(), per_channel)),
            reshape(param_at(bias_).var(), per_channel));
  }
  return y;
}

}  // namespace ruccl::nn
