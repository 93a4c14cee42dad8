#pragma once
#include <cstdint>
#include <vector>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// Normalises over the trailing dims `normalized_shape` (population variance, + eps inside the
/// square root), then scales by "weight" (ones) and shifts by "bias" (zeros) when
/// elementwise_affine, as torch.nn.LayerNorm. A composite of mean, sub, mul, sqrt and div.
class LayerNorm : public Cloneable<LayerNorm> {
 public:
  explicit LayerNorm(std::vector<std::int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true, DType dtype = DType::F32);
  LayerNorm(std::int64_t normalized_size, double eps = 1e-5, bool elementwise_affine = true,
            DType dtype = DType::F32)
      : LayerNorm(std::vector<std::int64_t>{normalized_size}, eps, elementwise_affine, dtype) {}
  Var forward(const Var& x) override;
  /// ValueError without elementwise_affine.
  Param& weight();
  Param& bias();

 private:
  std::vector<std::int64_t> shape_;
  double eps_;
  bool affine_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

}  // namespace ruccl::nn
