// autodiff::batch_norm, the fused op behind BatchNorm1d/2d: float64 gradchecks in training and
// evaluation mode (with and without the affine parameters, on a non-contiguous input); the same
// values, gradients and running statistics as the composite of element-wise ops it replaced
// (F32, a shape whose runs are not a multiple of the kernels' lanes), on 1 and 2 threads bit for
// bit; the errors it raises. PyTorch's values: nn_norm_golden_test (the layers run on this op).
#include <catch2/catch.hpp>

#include <string>

#include "autodiff/autodiff.h"
#include "autodiff/ops/batch_norm.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/ops/batch_norm.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = DType::F64) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, dtype);
}

/// gradcheck of sum(batch_norm(x, ...) * c) over x and the given affine parameters.
void check_grad(const Tensor& x, bool weight, bool bias, bool training, bool running) {
  const std::int64_t channels = x.shape()[1];
  std::vector<Var> inputs{Var(x, true)};
  if (weight) inputs.emplace_back(ruccl::add(randn({channels}, 2), 1.5), true);
  if (bias) inputs.emplace_back(randn({channels}, 3), true);
  const Tensor c = randn(x.shape(), 4);
  const Tensor rm0 = randn({channels}, 5);
  const Tensor rv0 = ruccl::add(ruccl::abs(randn({channels}, 6)), 0.5);
  GradcheckReport r = gradcheck(
      [&](const std::vector<Var>& in) {
        // Fresh running statistics each call: a training call updates them in place.
        const Tensor rm = running ? rm0.clone() : Tensor();
        const Tensor rv = running ? rv0.clone() : Tensor();
        const Var w = weight ? in[1] : Var();
        const Var b = bias ? in[weight ? 2 : 1] : Var();
        return sum(mul(batch_norm(in[0], rm, rv, w, b, training, 0.1, 1e-5), Var(c)));
      },
      inputs);
  INFO(x.shape() << " weight " << weight << " bias " << bias << " training " << training << ": "
                 << r.message);
  CHECK(r.ok);
}

/// The composite the layers used before the fused op: (x - mean) / sqrt(var + eps) * w + b.
Var composite(const Var& x, const Var& w, const Var& b, double eps) {
  const std::vector<std::int64_t> dims{0, 2, 3};
  const Shape per_channel{1, x.shape()[1], 1, 1};
  Var mean = autodiff::mean(x, dims, true);
  Var centered = sub(x, mean);
  Var var = autodiff::mean(mul(centered, centered), dims, true);
  Var y = div(centered, sqrt(add(var, eps)));
  return add(mul(y, reshape(w, per_channel)), reshape(b, per_channel));
}

}  // namespace

TEST_CASE("batch_norm passes gradcheck in training and evaluation mode, affine or not",
          "[autodiff][nn]") {
  for (const bool training : {true, false}) {
    check_grad(randn({4, 3}, 10), true, true, training, true);
    check_grad(randn({3, 2, 5}, 11), true, true, training, true);
    check_grad(randn({2, 3, 2, 3}, 12), true, true, training, true);
    check_grad(randn({2, 3, 3, 2}, 13), false, true, training, true);
    check_grad(randn({2, 3, 3, 2}, 14), true, false, training, true);
  }
  // Batch statistics without running ones; no affine parameters at all.
  check_grad(randn({3, 2, 2, 2}, 15), false, false, true, false);
  // A non-contiguous input: [N, C, H, W] as a permuted view of [N, H, W, C].
  check_grad(randn({2, 3, 2, 4}, 16).permute({0, 3, 1, 2}), true, true, true, true);
}

TEST_CASE("batch_norm gives the composite's values, gradients and running statistics",
          "[autodiff][nn]") {
  const Shape shape{5, 4, 6, 7};  // runs of 42: not a multiple of the kernels' 8 lanes
  const Tensor x = ruccl::add(ruccl::mul(randn(shape, 20, DType::F32), 3.0), 2.0);
  const Tensor w = randn({4}, 21, DType::F32);
  const Tensor b = randn({4}, 22, DType::F32);
  const Tensor c = randn(shape, 23, DType::F32);
  const Tensor rm = Tensor::zeros({4});
  const Tensor rv = Tensor::ones({4});

  Var xf(x, true), wf(w, true), bf(b, true);
  sum(mul(batch_norm(xf, rm, rv, wf, bf, true, 0.25, 1e-5), Var(c))).backward();
  Var xc(x, true), wc(w, true), bc(b, true);
  const Var yc = composite(xc, wc, bc, 1e-5);
  sum(mul(yc, Var(c))).backward();

  NoGradGuard no_grad;
  CHECK_THAT(batch_norm(Var(x), Tensor(), Tensor(), Var(w), Var(b), true).value(),
             TensorNear(yc.value(), 1e-4, 1e-5));
  CHECK_THAT(xf.grad(), TensorNear(xc.grad(), 1e-4, 1e-5));
  CHECK_THAT(wf.grad(), TensorNear(wc.grad(), 1e-4, 1e-4));
  CHECK_THAT(bf.grad(), TensorNear(bc.grad(), 1e-4, 1e-4));
  // running = 0.75 running + 0.25 batch, with the unbiased variance.
  const double n = 5 * 6 * 7;
  const Tensor batch_mean = ruccl::mean(x, {0, 2, 3});
  const Tensor centered = ruccl::sub(x, batch_mean.reshape({1, 4, 1, 1}));
  const Tensor batch_var = ruccl::div(ruccl::sum(ruccl::mul(centered, centered), {0, 2, 3}), n);
  CHECK_THAT(rm, TensorNear(ruccl::mul(batch_mean, 0.25), 1e-5, 1e-6));
  CHECK_THAT(rv,
             TensorNear(ruccl::add(ruccl::mul(batch_var, 0.25 * n / (n - 1.0)), 0.75), 1e-5, 1e-6));
}

TEST_CASE("batch_norm's kernels give the same bits on 1 and 2 threads", "[autodiff][nn]") {
  // Large enough that the kernels split the work (over 64K elements).
  const Tensor x = randn({8, 6, 40, 40}, 30, DType::F32);
  const Tensor g = randn({8, 6, 40, 40}, 31, DType::F32);
  const int threads = cpu::num_threads();
  std::vector<Tensor> results[2];
  for (const int t : {1, 2}) {
    cpu::set_num_threads(t);
    const BatchNormStats stats = batch_norm_stats(x);
    const BatchNormGradSums sums = batch_norm_backward_reduce(g, x, stats.mean);
    const Tensor y = batch_norm_elemt(x, stats.var, stats.mean);
    const Tensor dx =
        batch_norm_backward_elemt(g, x, stats.mean, sums.sum_dy, stats.var, sums.sum_dy_xmu);
    results[t - 1] = {stats.mean, stats.var, sums.sum_dy, sums.sum_dy_xmu, y, dx};
  }
  cpu::set_num_threads(threads);
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    INFO("result " << i);
    CHECK_THAT(results[1][i], TensorEqual(results[0][i]));
  }
}

TEST_CASE("batch_norm's statistics and passes match their closed forms", "[autodiff][nn]") {
  // Channel 0 holds 1, 2, 3, 4 (mean 2.5, variance 1.25), channel 1 holds 10 twice and 20 twice.
  const Tensor x = Tensor::from_vector<double>({1, 2, 10, 20, 3, 4, 10, 20}, {2, 2, 2});
  const BatchNormStats stats = batch_norm_stats(x);
  CHECK_THAT(stats.mean, TensorEqual(Tensor::from_vector<double>({2.5, 15.0}, {2})));
  CHECK_THAT(stats.var, TensorEqual(Tensor::from_vector<double>({1.25, 25.0}, {2})));
  const Tensor scale = Tensor::from_vector<double>({2.0, -1.0}, {2});
  const Tensor shift = Tensor::from_vector<double>({1.0, 0.5}, {2});
  CHECK_THAT(
      batch_norm_elemt(x, scale, shift),
      TensorEqual(Tensor::from_vector<double>({3, 5, -9.5, -19.5, 7, 9, -9.5, -19.5}, {2, 2, 2})));
  const Tensor g = Tensor::from_vector<double>({1, 0, 0, 1, 0, 2, 1, 0}, {2, 2, 2});
  const BatchNormGradSums sums = batch_norm_backward_reduce(g, x, stats.mean);
  CHECK_THAT(sums.sum_dy, TensorEqual(Tensor::from_vector<double>({3.0, 2.0}, {2})));
  // Channel 0: 1 * (1 - 2.5) + 2 * (4 - 2.5) = 1.5; channel 1: 1 * (20 - 15) + 1 * (10 - 15) = 0.
  CHECK_THAT(sums.sum_dy_xmu, TensorEqual(Tensor::from_vector<double>({1.5, 0.0}, {2})));
  const Tensor dx = batch_norm_backward_elemt(g, x, stats.mean, shift, scale, scale);
  // (g - shift[c] - (x - mean[c]) * scale[c]) * scale[c]
  CHECK_THAT(dx, TensorEqual(
                     Tensor::from_vector<double>({6, 0, 5.5, -5.5, -4, -4, 4.5, -4.5}, {2, 2, 2})));
}

TEST_CASE("batch_norm names itself and says what it expected", "[autodiff][nn]") {
  const Var x(Tensor::zeros({4, 3}));
  const Tensor c3 = Tensor::zeros({3});
  CHECK_THROWS_MATCHES(batch_norm(Var(Tensor::zeros({4})), Tensor(), Tensor(), Var(), Var(), true),
                       ShapeError,
                       Catch::Message("batch_norm: expected an input [N, C, ...], got [4]"));
  CHECK_THROWS_AS(
      batch_norm(Var(Tensor::zeros({4, 3}, DType::I64)), Tensor(), Tensor(), Var(), Var(), true),
      DTypeError);
  CHECK_THROWS_AS(batch_norm(x, Tensor::zeros({2}), Tensor::ones({2}), Var(), Var(), true),
                  ShapeError);
  CHECK_THROWS_MATCHES(
      batch_norm(x, c3, c3, Var(Tensor::zeros({3}, DType::F64)), Var(), true), DTypeError,
      Catch::Message("batch_norm: expected weight of dtype F32 (the input's), got F64"));
  CHECK_THROWS_AS(batch_norm(x, c3, Tensor(), Var(), Var(), true), ValueError);
  CHECK_THROWS_MATCHES(batch_norm(x, Tensor(), Tensor(), Var(), Var(), false), ValueError,
                       Catch::Message("batch_norm: expected running statistics in evaluation "
                                      "mode (training false), got none"));
  CHECK_THROWS_WITH(batch_norm(Var(Tensor::zeros({1, 3})), c3, c3.clone(), Var(), Var(), true),
                    Catch::Contains("expected more than 1 value per channel"));
  CHECK_THROWS_AS(batch_norm_stats(Tensor::zeros({0, 3})), ValueError);
  CHECK_THROWS_AS(batch_norm_elemt(Tensor::zeros({2, 3}), c3, Tensor::zeros({2})), ShapeError);
  CHECK_THROWS_AS(batch_norm_backward_reduce(Tensor::zeros({2, 2}), Tensor::zeros({2, 3}), c3),
                  ShapeError);
}
