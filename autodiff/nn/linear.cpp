#include "autodiff/nn/linear.h"

#include <cmath>

#include "autodiff/nn/init.h"
#include "autodiff/ops/linalg.h"

namespace ruccl::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, LinearOptions options)
    : Linear(in_features, out_features, nullptr, options) {}

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen,
               LinearOptions options)
    : Linear(in_features, out_features, &gen, options) {}

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Generator* gen,
               LinearOptions options)
    : in_(in_features), out_(out_features), has_bias_(options.bias) {
  const DType dtype = options.dtype;
  RUCCL_CHECK(is_floating(dtype), DTypeError, "Linear: expected a floating dtype, got ", dtype);
  RUCCL_CHECK(in_features > 0 && out_features > 0, ValueError,
              "Linear: expected positive feature counts, got in ", in_features, ", out ",
              out_features);
  // torch.nn.Linear: kaiming_uniform(a = sqrt(5)) on the weight is U(-1/sqrt(in), 1/sqrt(in)),
  // and the bias uses the same bound.
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  Param w(Tensor::zeros({out_features, in_features}, dtype));
  Param b = has_bias_ ? Param(Tensor::zeros({out_features}, dtype)) : Param();
  auto draw = [&](Generator& g) {
    init::uniform_(w, -bound, bound, g);
    if (has_bias_) init::uniform_(b, -bound, bound, g);
  };
  // The default generator stays locked for both draws, so they are consecutive even when other
  // threads draw too.
  gen != nullptr ? draw(*gen) : with_default_generator(draw);
  weight_ = register_parameter("weight", w);
  if (has_bias_) bias_ = register_parameter("bias", b);
}

Param& Linear::bias() {
  RUCCL_CHECK(has_bias_, ValueError, "Linear::bias: this Linear was built without a bias");
  return param_at(bias_);
}

const Param& Linear::bias() const {
  RUCCL_CHECK(has_bias_, ValueError, "Linear::bias: this Linear was built without a bias");
  return param_at(bias_);
}

Var Linear::forward(const Var& x) {
  RUCCL_CHECK(x.dim() >= 1 && x.shape()[x.dim() - 1] == in_, ShapeError, describe(),
              ": expected an input whose last dim is ", in_, ", got ", x.shape());
  RUCCL_CHECK(x.dtype() == weight().dtype(), DTypeError, describe(),
              ": expected an input of dtype ", weight().dtype(), " (the parameters'), got ",
              x.dtype());
  return autodiff::linear(x, weight().var(), has_bias_ ? param_at(bias_).var() : Var());
}

}  // namespace ruccl::nn
