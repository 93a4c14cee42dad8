#pragma once
// Pooling and flattening modules (no parameters): torch.nn.MaxPool2d, AvgPool2d,
// AdaptiveAvgPool2d and Flatten, wrapping the Var ops of autodiff/ops/conv.h and shape.h.
#include <cstdint>

#include "autodiff/nn/module.h"
#include "tensor/ops/pool.h"

namespace ruccl::nn {

/// [N, C, H, W] -> [N, C, oh, ow]: `nn::MaxPool2d pool({.kernel = 2})` (stride = kernel).
class MaxPool2d : public Cloneable<MaxPool2d> {
 public:
  explicit MaxPool2d(MaxPool2dSpec spec) : spec_(spec) {}
  Var forward(const Var& x) override;

 private:
  MaxPool2dSpec spec_;
};

/// [N, C, H, W] -> [N, C, oh, ow]: `nn::AvgPool2d pool({.kernel = 2})`.
class AvgPool2d : public Cloneable<AvgPool2d> {
 public:
  explicit AvgPool2d(AvgPool2dSpec spec) : spec_(spec) {}
  Var forward(const Var& x) override;

 private:
  AvgPool2dSpec spec_;
};

/// [N, C, H, W] -> [N, C, oh, ow] for a fixed output size: `nn::AdaptiveAvgPool2d pool(1)`.
class AdaptiveAvgPool2d : public Cloneable<AdaptiveAvgPool2d> {
 public:
  explicit AdaptiveAvgPool2d(Size2d output_size) : output_size_(output_size) {}
  Var forward(const Var& x) override;

 private:
  Size2d output_size_;
};

/// Merges dims [start, end] into one (torch's defaults: 1 and -1, keeping the batch dim).
class Flatten : public Cloneable<Flatten> {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1)
      : start_(start_dim), end_(end_dim) {}
  Var forward(const Var& x) override;

 private:
  std::int64_t start_;
  std::int64_t end_;
};

}  // namespace ruccl::nn
