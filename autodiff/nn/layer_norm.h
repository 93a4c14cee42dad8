#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// ShapeError unless `x`'s trailing dims are `normalized_shape`; `who` names the layer
/// (Module::describe). What LayerNorm and RMSNorm check.
void check_normalized_shape(const Var& x, const std::vector<std::int64_t>& normalized_shape,
                            const std::string& who);

/// LayerNorm's forward on given affine weights (both defined, or both undefined for none): the
/// fused op where the backend has it, else the composite. `who` names the caller in errors.
Var layer_norm_forward(const Var& x, const std::vector<std::int64_t>& normalized_shape,
                       const Var& weight, const Var& bias, double eps, const std::string& who);

/// Options of LayerNorm (every member has a default: `{.dtype = DType::F64}` keeps eps and
/// elementwise_affine).
struct LayerNormOptions {
  /// Added to the variance inside the square root.
  double eps = 1e-5;
  /// Whether to learn "weight" (ones) and "bias" (zeros).
  bool elementwise_affine = true;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// Normalises over the trailing dims `normalized_shape` (population variance, + eps inside the
/// square root), then scales by "weight" (ones) and shifts by "bias" (zeros) when
/// elementwise_affine, as torch.nn.LayerNorm. One fused autodiff::layer_norm node where the backend
/// has batch norm's kernels (else a composite of mean, sub, mul, sqrt and div).
class LayerNorm : public Cloneable<LayerNorm> {
 public:
  explicit LayerNorm(std::vector<std::int64_t> normalized_shape, LayerNormOptions options = {});
  explicit LayerNorm(std::int64_t normalized_size, LayerNormOptions options = {})
      : LayerNorm(std::vector<std::int64_t>{normalized_size}, options) {}
  Var forward(const Var& x) override;
  double eps() const { return eps_; }
  bool elementwise_affine() const { return affine_; }
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
