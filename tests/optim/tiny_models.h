#pragma once
// Small models for the optim tests.
#include <memory>
#include <string>
#include <vector>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/module.h"
#include "autodiff/nn/sequential.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/reduce.h"

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

/// Linear(5 -> 8), Tanh, Linear(8 -> 3): 75 parameters in 4 tensors (ParamIds 1-4), drawn from
/// `seed`.
inline std::shared_ptr<nn::Sequential> make_mlp(std::uint64_t seed, DType dtype = DType::F32) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(5, 8, gen, nn::LinearOptions{.dtype = dtype}),
      std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(8, 3, gen, nn::LinearOptions{.dtype = dtype})});
  model->assign_param_ids(1);
  return model;
}

/// Two 2x2 weights "a" (ParamId 1) and "b" (ParamId 2), all ones.
inline ParamBag branchy_model() {
  return ParamBag(
      {{"a", nn::Param(1, Tensor::ones({2, 2}))}, {"b", nn::Param(2, Tensor::ones({2, 2}))}});
}

/// sum(x·a) (+ sum(x·b) unless rank == skipper: a branch not taken), x = full(1 + rank).
inline autodiff::Var branchy_loss(ParamBag& model, int rank, int skipper) {
  const Tensor x = Tensor::full({2, 2}, 1.0 + rank);
  autodiff::Var loss = autodiff::sum(autodiff::matmul(autodiff::Var(x), model.param("a").var()));
  if (rank != skipper) {
    loss = loss + autodiff::sum(autodiff::matmul(autodiff::Var(x), model.param("b").var()));
  }
  return loss;
}

/// Samples [first, first + count) of a global batch: inputs [count, 3] and targets [count, 2]
/// that are small dyadic numbers, so that with dyadic_model() every product, sum and division by
/// a power of two is exact in F64 and results compare bit for bit.
inline std::pair<Tensor, Tensor> samples(std::int64_t first, std::int64_t count) {
  std::vector<double> x, y;
  for (std::int64_t i = first; i < first + count; ++i) {
    for (int j = 0; j < 3; ++j) x.push_back(static_cast<double>((i * 3 + j) % 5) * 0.25 - 0.5);
    for (int j = 0; j < 2; ++j) y.push_back(static_cast<double>((i + j) % 3) * 0.5);
  }
  return {Tensor::from_vector(x, {count, 3}), Tensor::from_vector(y, {count, 2})};
}

/// A Linear(3 -> 2) in F64 (ParamIds 1, 2) whose weights are dyadic (so the forward is exact).
inline std::shared_ptr<nn::Linear> dyadic_model() {
  auto model = make_linear(3, 2, 1, DType::F64);
  std::vector<double> w, b;
  for (int i = 0; i < 6; ++i) w.push_back(static_cast<double>(i % 4) * 0.125 - 0.25);
  for (int i = 0; i < 2; ++i) b.push_back(0.5 * i);
  model->weight().set_value(Tensor::from_vector(w, {2, 3}));
  model->bias().set_value(Tensor::from_vector(b, {2}));
  return model;
}

}  // namespace ruccl::optim::test_support
