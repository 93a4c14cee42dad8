#include "autodiff/nn/conv.h"

#include <cmath>

#include "autodiff/nn/init.h"
#include "autodiff/ops/conv.h"

namespace ruccl::nn {

namespace {

/// The weight [out, in / groups, k...] and bias [out] of a convolution, drawn as torch does.
struct ConvParams {
  Param weight;
  Param bias;
};

ConvParams make_conv_params(const char* name, std::int64_t in, std::int64_t out, Shape kernel,
                            std::int64_t groups, bool bias, DType dtype, Generator* gen) {
  RUCCL_CHECK(dtype == DType::F32 || dtype == DType::F64, DTypeError, name,
              ": expected an F32 or F64 dtype, got ", dtype);
  RUCCL_CHECK(in > 0 && out > 0, ValueError, name, ": expected positive channel counts, got in ",
              in, ", out ", out);
  RUCCL_CHECK(groups >= 1 && in % groups == 0 && out % groups == 0, ValueError, name,
              ": expected groups dividing both channel counts (in ", in, ", out ", out, "), got ",
              groups);
  std::int64_t fan_in = in / groups;
  for (std::int64_t d = 0; d < kernel.size(); ++d) {
    RUCCL_CHECK(kernel[d] >= 1, ValueError, name, ": expected kernel sizes >= 1, got ", kernel);
    fan_in *= kernel[d];
  }
  Shape shape{out, in / groups};
  for (std::int64_t d = 0; d < kernel.size(); ++d) shape.push_back(kernel[d]);
  // kaiming_uniform(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias uses the same.
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  ConvParams p{Param(Tensor::zeros(shape, dtype)),
               bias ? Param(Tensor::zeros({out}, dtype)) : Param()};
  auto draw = [&](Generator& g) {
    init::uniform_(p.weight, -bound, bound, g);
    if (bias) init::uniform_(p.bias, -bound, bound, g);
  };
  gen != nullptr ? draw(*gen) : with_default_generator(draw);
  return p;
}

void check_input(const Module& m, const Var& x, std::int64_t rank, std::int64_t in,
                 const Param& weight) {
  RUCCL_CHECK(x.dim() == rank && x.shape()[1] == in, ShapeError, m.describe(), ": expected a ",
              rank, "-d input with ", in, " channels in dim 1, got ", x.shape());
  RUCCL_CHECK(x.dtype() == weight.dtype(), DTypeError, m.describe(),
              ": expected an input of dtype ", weight.dtype(), " (the parameters'), got ",
              x.dtype());
}

}  // namespace

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size,
               Conv2dOptions options)
    : Conv2d(in_channels, out_channels, kernel_size, nullptr, options) {}

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size,
               Generator& gen, Conv2dOptions options)
    : Conv2d(in_channels, out_channels, kernel_size, &gen, options) {}

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size,
               Generator* gen, Conv2dOptions options)
    : in_(in_channels), options_(options) {
  ConvParams p =
      make_conv_params("Conv2d", in_channels, out_channels, {kernel_size.h, kernel_size.w},
                       options.groups, options.bias, options.dtype, gen);
  weight_ = register_parameter("weight", p.weight);
  if (options.bias) bias_ = register_parameter("bias", p.bias);
}

Param& Conv2d::bias() {
  RUCCL_CHECK(options_.bias, ValueError, "Conv2d::bias: this Conv2d was built without a bias");
  return param_at(bias_);
}

Var Conv2d::forward(const Var& x) {
  check_input(*this, x, 4, in_, weight());
  return autodiff::conv2d(x, weight().var(), options_.bias ? param_at(bias_).var() : Var(), spec());
}

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
               Conv1dOptions options)
    : Conv1d(in_channels, out_channels, kernel_size, nullptr, options) {}

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
               Generator& gen, Conv1dOptions options)
    : Conv1d(in_channels, out_channels, kernel_size, &gen, options) {}

Conv1d::Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
               Generator* gen, Conv1dOptions options)
    : in_(in_channels), options_(options) {
  ConvParams p = make_conv_params("Conv1d", in_channels, out_channels, {kernel_size},
                                  options.groups, options.bias, options.dtype, gen);
  weight_ = register_parameter("weight", p.weight);
  if (options.bias) bias_ = register_parameter("bias", p.bias);
}

Param& Conv1d::bias() {
  RUCCL_CHECK(options_.bias, ValueError, "Conv1d::bias: this Conv1d was built without a bias");
  return param_at(bias_);
}

Var Conv1d::forward(const Var& x) {
  check_input(*this, x, 3, in_, weight());
  return autodiff::conv1d(x, weight().var(), options_.bias ? param_at(bias_).var() : Var(),
                          {options_.stride, options_.padding, options_.dilation, options_.groups});
}

}  // namespace ruccl::nn
