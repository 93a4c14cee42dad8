#pragma once
// Small models for the optim tests.
#include <memory>
#include <string>
#include <vector>

#include "autodiff/nn/linear.h"
#include "autodiff/nn/module.h"

namespace ruccl::optim::test_support {

/// Parameters given by path, with explicit ids (a Param passed twice is tied).
class ParamBag : public nn::Cloneable<ParamBag> {
 public:
  ParamBag(const std::vector<std::pair<std::string, nn::Param>>& params) {  // NOLINT
    for (const auto& [name, p] : params) register_parameter(name, p);
  }
};

/// A Linear(in -> out) with ParamIds 1 (weight) and 2 (bias), initialised from `seed`.
inline std::shared_ptr<nn::Linear> make_linear(std::int64_t in, std::int64_t out,
                                               std::uint64_t seed, DType dtype = DType::F32) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Linear>(in, out, gen, nn::LinearOptions{.dtype = dtype});
  model->assign_param_ids(1);
  return model;
}

}  // namespace ruccl::optim::test_support
