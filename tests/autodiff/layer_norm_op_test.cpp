// autodiff::layer_norm, the fused op behind nn::LayerNorm: float64 gradchecks over one and two
// normalised dims, with and without the affine parameters, on a non-contiguous input; the
// composite's values and gradients (F32); its errors. PyTorch's values: golden_test's
// Embedding + LayerNorm cases, F64 and F32 (nn::LayerNorm runs on this op).
#include <catch2/catch.hpp>

#include <string>

#include "autodiff/autodiff.h"
#include "autodiff/ops/layer_norm.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorNear;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = DType::F64) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, dtype);
}

void check_grad(const Tensor& x, const std::vector<std::int64_t>& normalized, bool weight,
                bool bias) {
  const Shape ps(normalized);
  std::vector<Var> inputs{Var(x, true)};
  if (weight) inputs.emplace_back(ruccl::add(randn(ps, 2), 1.0), true);
  if (bias) inputs.emplace_back(randn(ps, 3), true);
  const Tensor c = randn(x.shape(), 4);
  GradcheckReport r = gradcheck(
      [&](const std::vector<Var>& in) {
        const Var w = weight ? in[1] : Var();
        const Var b = bias ? in[weight ? 2 : 1] : Var();
        return sum(mul(layer_norm(in[0], normalized, w, b, 1e-5), Var(c)));
      },
      inputs);
  INFO(x.shape() << " weight " << weight << " bias " << bias << ": " << r.message);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("layer_norm passes gradcheck over one and two dims, affine or not", "[autodiff][nn]") {
  check_grad(randn({3, 5}, 10), {5}, true, true);
  check_grad(randn({2, 3, 4}, 11), {4}, true, true);
  check_grad(randn({2, 3, 4}, 12), {3, 4}, true, true);
  check_grad(randn({4, 6}, 13), {6}, false, false);
  check_grad(randn({4, 6}, 14), {6}, true, false);
  check_grad(randn({4, 6}, 15), {6}, false, true);
  check_grad(randn({5, 3}, 16).transpose(0, 1), {5}, true, true);  // non-contiguous
}

TEST_CASE("layer_norm gives the composite's values and gradients", "[autodiff][nn]") {
  const Shape shape{4, 9, 37};  // rows of 37: not a multiple of the kernels' 8 lanes
  const Tensor x = ruccl::add(ruccl::mul(randn(shape, 20, DType::F32), 3.0), 2.0);
  const Tensor w = randn({37}, 21, DType::F32);
  const Tensor b = randn({37}, 22, DType::F32);
  const Tensor c = randn(shape, 23, DType::F32);
  Var xf(x, true), wf(w, true), bf(b, true);
  const Var yf = layer_norm(xf, {37}, wf, bf, 1e-5);
  sum(mul(yf, Var(c))).backward();
  Var xc(x, true), wc(w, true), bc(b, true);
  const Var centered = sub(xc, mean(xc, {2}, true));
  const Var var = mean(mul(centered, centered), {2}, true);
  const Var yc = add(mul(div(centered, sqrt(add(var, 1e-5))), wc), bc);
  sum(mul(yc, Var(c))).backward();
  CHECK_THAT(yf.value(), TensorNear(yc.value(), 1e-4, 1e-5));
  CHECK_THAT(xf.grad(), TensorNear(xc.grad(), 1e-4, 1e-4));
  CHECK_THAT(wf.grad(), TensorNear(wc.grad(), 1e-4, 1e-4));
  CHECK_THAT(bf.grad(), TensorNear(bc.grad(), 1e-4, 1e-4));
}

TEST_CASE("layer_norm names itself and says what it expected", "[autodiff][nn]") {
  const Var x(Tensor::zeros({2, 4}));
  CHECK_THROWS_MATCHES(layer_norm(x, {3}, Var(), Var()), ShapeError,
                       Catch::Message("layer_norm: expected an input ending in [3], got [2, 4]"));
  CHECK_THROWS_MATCHES(layer_norm(x, {4}, Var(Tensor::zeros({2})), Var()), ShapeError,
                       Catch::Message("layer_norm: expected weight of shape [4], got [2]"));
  CHECK_THROWS_AS(layer_norm(x, {4}, Var(), Var(Tensor::zeros({4}, DType::F64))), DTypeError);
  CHECK_THROWS_AS(layer_norm(Var(Tensor::zeros({2, 4}, DType::I64)), {4}, Var(), Var()),
                  DTypeError);
  CHECK_THROWS_AS(layer_norm(Var(Tensor::zeros({0, 4})), {4}, Var(), Var()), ValueError);
}
