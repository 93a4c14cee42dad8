#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// Options of RMSNorm (every member has a default).
struct RMSNormOptions {
  /// Added to the mean square inside the square root; std::nullopt (torch's default): the
  /// machine epsilon of the input's dtype (2^-23 for F32, 2^-52 for F64).
  std::optional<double> eps = std::nullopt;
  /// Whether to learn "weight" (ones).
  bool elementwise_affine = true;
  /// The parameter's dtype (floating).
  DType dtype = DType::F32;
};

/// Root-mean-square normalisation over the trailing dims `normalized_shape` (torch.nn.RMSNorm,
/// PyTorch 2.4): y = x / sqrt(mean(x^2) + eps) * weight. No centring and no bias. A composite of
/// mul, mean, add, sqrt and div.
///
///   nn::RMSNorm norm(64, {.eps = 1e-6});
///   Var y = norm(x);                // x [..., 64]
class RMSNorm : public Cloneable<RMSNorm> {
 public:
  explicit RMSNorm(std::vector<std::int64_t> normalized_shape, RMSNormOptions options = {});
  explicit RMSNorm(std::int64_t normalized_size, RMSNormOptions options = {})
      : RMSNorm(std::vector<std::int64_t>{normalized_size}, options) {}
  Var forward(const Var& x) override;
  /// ValueError without elementwise_affine.
  Param& weight();

 private:
  std::vector<std::int64_t> shape_;
  RMSNormOptions options_;
  std::size_t weight_ = 0;
};

}  // namespace ruccl::nn
