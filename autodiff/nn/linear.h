#pragma once
#include <cstdint>

#include "autodiff/nn/module.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Options of Linear. Every member has a default, so a designated initializer changes only the
/// ones it names: `nn::Linear(16, 32, {.bias = false})` keeps F32.
struct LinearOptions {
  /// Whether to learn an additive bias.
  bool bias = true;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// y = x @ weight^T + bias, weight [out, in] and bias [out] as torch.nn.Linear, initialised like
/// it: U(-1/sqrt(in), 1/sqrt(in)) for both (kaiming_uniform with a = sqrt(5)), drawn from `gen`
/// or, without one, from the default generator (ruccl::manual_seed). The weight's values come
/// first, then the bias's, from consecutive draws. Parameters: "weight" and, with bias, "bias".
///
///   nn::Linear fc(16, 32);                                 // default generator, F32, bias
///   nn::Linear head(32, 10, gen, {.bias = false, .dtype = DType::F64});
class Linear : public Cloneable<Linear> {
 public:
  explicit Linear(std::int64_t in_features, std::int64_t out_features, LinearOptions options = {});
  Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen,
         LinearOptions options = {});
  /// x [..., in] -> [..., out].
  Var forward(const Var& x) override;
  Param& weight() { return param_at(weight_); }
  const Param& weight() const { return param_at(weight_); }
  bool has_bias() const { return has_bias_; }
  /// The bias; ValueError when built without one.
  Param& bias();
  const Param& bias() const;
  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

 private:
  /// Both public constructors: draws from *gen, or from the default generator when null.
  Linear(std::int64_t in_features, std::int64_t out_features, Generator* gen,
         LinearOptions options);
  std::int64_t in_;
  std::int64_t out_;
  bool has_bias_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

}  // namespace ruccl::nn
