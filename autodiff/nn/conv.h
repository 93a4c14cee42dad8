#pragma once
// Convolution modules (torch.nn.Conv1d / Conv2d): weight [out, in / groups, k...] and bias [out],
// both initialised as PyTorch does, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups
// * prod(k) (kaiming_uniform with a = sqrt(5) for the weight), drawn from `gen` or, without one,
// from the default generator: the weight's values first, then the bias's.
#include <cstdint>

#include "autodiff/nn/module.h"
#include "tensor/ops/conv.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Options of Conv2d; every member has a default (`{.padding = 1, .bias = false}`).
struct Conv2dOptions {
  Size2d stride = 1;
  Size2d padding = 0;
  Size2d dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
  DType dtype = DType::F32;  // F32 or F64
};

/// [N, in, H, W] -> [N, out, oh, ow]. Parameters "weight" [out, in / groups, kh, kw] and, with
/// bias, "bias" [out].
///
///   nn::Conv2d conv(1, 32, 3, {.padding = 1});            // 3 x 3, default generator
///   nn::Conv2d down(32, 64, {3, 3}, gen, {.stride = 2, .padding = 1});
class Conv2d : public Cloneable<Conv2d> {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size,
         Conv2dOptions options = {});
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size, Generator& gen,
         Conv2dOptions options = {});
  Var forward(const Var& x) override;
  Param& weight() { return param_at(weight_); }
  const Param& weight() const { return param_at(weight_); }
  bool has_bias() const { return options_.bias; }
  /// The bias; ValueError when built without one.
  Param& bias();
  const Conv2dSpec spec() const {
    return {options_.stride, options_.padding, options_.dilation, options_.groups};
  }

 private:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel_size, Generator* gen,
         Conv2dOptions options);
  std::int64_t in_;
  Conv2dOptions options_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

/// Options of Conv1d.
struct Conv1dOptions {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
  DType dtype = DType::F32;  // F32 or F64
};

/// [N, in, L] -> [N, out, out_l]. Parameters "weight" [out, in / groups, k] and "bias" [out].
class Conv1d : public Cloneable<Conv1d> {
 public:
  Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
         Conv1dOptions options = {});
  Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
         Generator& gen, Conv1dOptions options = {});
  Var forward(const Var& x) override;
  Param& weight() { return param_at(weight_); }
  const Param& weight() const { return param_at(weight_); }
  bool has_bias() const { return options_.bias; }
  /// The bias; ValueError when built without one.
  Param& bias();

 private:
  Conv1d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size,
         Generator* gen, Conv1dOptions options);
  std::int64_t in_;
  Conv1dOptions options_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

}  // namespace ruccl::nn
