// issue 30's element-wise math, cumsum, sort/topk, multinomial and masking ops: edge cases in
// closed form (NaN and inf, one-sided clamp, k = 0 and k = size, ties, empty tensors, dtypes),
// the stub backend's refusal, and every error path. Random values against PyTorch:
// golden_model_ops_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tensor/backend/stub/stub_backend.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using Catch::Matchers::Contains;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor f32(std::vector<float> v, Shape shape) { return Tensor::from_vector<float>(v, shape); }
Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(v); }
Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }
Tensor i64(std::vector<std::int64_t> v, Shape shape) {
  return Tensor::from_vector<std::int64_t>(v, shape);
}
Tensor i64(std::vector<std::int64_t> v) { return Tensor::from_vector<std::int64_t>(v); }
Tensor boolean(std::vector<bool> v) { return Tensor::from_vector<bool>(v); }

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("isnan and isfinite give Bool for NaN, infinities, integers and Bool", "[tensor]") {
  const Tensor x = f32({1.5f, kNan, kInf, -kInf, 0.0f, -0.0f});
  CHECK_THAT(isnan(x), TensorEqual(boolean({false, true, false, false, false, false})));
  CHECK_THAT(isfinite(x), TensorEqual(boolean({true, false, false, false, true, true})));
  for (const DType dtype : {DType::F16, DType::BF16, DType::F64}) {
    INFO(dtype);
    CHECK_THAT(isnan(x.to(dtype)), TensorEqual(isnan(x)));
    CHECK_THAT(isfinite(x.to(dtype)), TensorEqual(isfinite(x)));
  }
  CHECK_THAT(isnan(i64({-3, 0, 7})), TensorEqual(boolean({false, false, false})));
  CHECK_THAT(isfinite(i64({-3, 0, 7}).to(DType::I32)), TensorEqual(boolean({true, true, true})));
  CHECK_THAT(isnan(boolean({true, false})), TensorEqual(boolean({false, false})));
  CHECK_THAT(isfinite(boolean({true, false})), TensorEqual(boolean({true, true})));
  CHECK(isnan(Tensor::zeros({0, 3})).shape() == Shape{0, 3});
}

TEST_CASE("the unary math propagates NaN and meets its infinities", "[tensor]") {
  const Tensor x = f32({kNan, kInf, -kInf, 0.0f});
  CHECK_THAT(rsqrt(f32({0.0f, 4.0f, -1.0f})), TensorEqual(f32({kInf, 0.5f, kNan})));
  CHECK_THAT(log1p(f32({-1.0f, 0.0f, -2.0f})), TensorEqual(f32({-kInf, 0.0f, kNan})));
  CHECK_THAT(expm1(f32({-kInf, 0.0f, kInf})), TensorEqual(f32({-1.0f, 0.0f, kInf})));
  CHECK_THAT(erf(f32({-kInf, 0.0f, kInf, kNan})), TensorEqual(f32({-1.0f, 0.0f, 1.0f, kNan})));
  CHECK_THAT(silu(f32({0.0f, kInf})), TensorEqual(f32({0.0f, kInf})));
  CHECK(std::isnan(sin(x).to_vector<float>()[0]));
  CHECK(std::isnan(cos(x).to_vector<float>()[1]));
  // Tiny arguments keep their precision (log1p/expm1 exist for this).
  CHECK_THAT(log1p(f64({1e-17})), TensorEqual(f64({1e-17})));
  CHECK_THAT(expm1(f64({1e-17})), TensorEqual(f64({1e-17})));
  CHECK(sin(Tensor::zeros({2, 0})).shape() == Shape{2, 0});
}

TEST_CASE("leaky_relu, elu and softplus follow torch's formulas and defaults", "[tensor]") {
  const Tensor x = f64({-2.0, -0.0, 0.0, 3.0});
  CHECK_THAT(leaky_relu(x), TensorEqual(f64({-0.02, -0.0, 0.0, 3.0})));
  CHECK_THAT(leaky_relu(x, 0.5), TensorEqual(f64({-1.0, -0.0, 0.0, 3.0})));
  CHECK_THAT(elu(x), TensorNear(f64({std::expm1(-2.0), 0.0, 0.0, 3.0}), 1e-15, 0));
  CHECK_THAT(elu(x, 2.0), TensorNear(f64({2 * std::expm1(-2.0), 0.0, 0.0, 3.0}), 1e-15, 0));
  // Default beta 1, threshold 20: x itself above the threshold.
  CHECK_THAT(softplus(f64({0.0, 21.0, -50.0})),
             TensorNear(f64({std::log(2.0), 21.0, std::log1p(std::exp(-50.0))}), 1e-15, 0));
  // beta 2, threshold 4: 2 * 3 > 4 is linear; 2 * 1 <= 4 is log(1 + e^2) / 2.
  CHECK_THAT(softplus(f64({3.0, 1.0}), 2.0, 4.0),
             TensorNear(f64({3.0, std::log1p(std::exp(2.0)) / 2.0}), 1e-15, 0));
  CHECK(std::isnan(leaky_relu(f32({kNan})).item<float>()));
  CHECK(std::isnan(elu(f32({kNan})).item<float>()));
}

TEST_CASE("clamp takes either bound alone, both, integers and NaN as torch", "[tensor]") {
  const Tensor x = f32({-3.0f, -0.5f, 0.5f, 4.0f, kNan});
  CHECK_THAT(clamp(x, -1.0), TensorEqual(f32({-1.0f, -0.5f, 0.5f, 4.0f, kNan})));
  CHECK_THAT(clamp(x, std::nullopt, 1.0), TensorEqual(f32({-3.0f, -0.5f, 0.5f, 1.0f, kNan})));
  CHECK_THAT(clamp(x, -1.0, 1.0), TensorEqual(f32({-1.0f, -0.5f, 0.5f, 1.0f, kNan})));
  // min > max: every element becomes max (torch).
  CHECK_THAT(clamp(x, 2.0, 1.0), TensorEqual(f32({1.0f, 1.0f, 1.0f, 1.0f, kNan})));
  // Integers stay integers and exact at the int64 extremes.
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  CHECK_THAT(clamp(i64({-5, 3, big}), 0, big - 1), TensorEqual(i64({0, 3, big - 1})));
  CHECK(clamp(i64({1}).to(DType::I32), 0).dtype() == DType::I32);
}

TEST_CASE("cumsum sums along a dim, forward or from the end, integers as I64", "[tensor]") {
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THAT(cumsum(x, 1), TensorEqual(f32({1, 3, 6, 4, 9, 15}, {2, 3})));
  CHECK_THAT(cumsum(x, 0), TensorEqual(f32({1, 2, 3, 5, 7, 9}, {2, 3})));
  CHECK_THAT(cumsum(x, -1, true), TensorEqual(f32({6, 5, 3, 15, 11, 6}, {2, 3})));
  CHECK_THAT(cumsum(x.transpose(0, 1), 0), TensorEqual(f32({1, 4, 3, 9, 6, 15}, {3, 2})));
  CHECK_THAT(cumsum(i64({1, 2, 3}).to(DType::I32), 0), TensorEqual(i64({1, 3, 6})));
  CHECK_THAT(cumsum(boolean({true, false, true}), 0), TensorEqual(i64({1, 1, 2})));
  CHECK_THAT(cumsum(Tensor::scalar(2.5), 0), TensorEqual(Tensor::scalar(2.5)));
  CHECK(cumsum(Tensor::zeros({0, 3}), 1).shape() == Shape{0, 3});
  CHECK(std::isnan(cumsum(f32({1.0f, kNan, 2.0f}), 0).to_vector<float>()[2]));
}

TEST_CASE("sort is stable on ties, puts NaN last ascending and first descending", "[tensor]") {
  const Tensor x = f32({3, 1, 2, 1, 3, kNan, 1});
  auto [v, i] = sort(x, 0, false, true);
  CHECK_THAT(v, TensorEqual(f32({1, 1, 1, 2, 3, 3, kNan})));
  CHECK_THAT(i, TensorEqual(i64({1, 3, 6, 2, 0, 4, 5})));
  auto [vd, id] = sort(x, 0, true, true);
  CHECK_THAT(vd, TensorEqual(f32({kNan, 3, 3, 2, 1, 1, 1})));
  CHECK_THAT(id, TensorEqual(i64({5, 0, 4, 2, 1, 3, 6})));
  // Along dim 0 of a 2-d tensor, and integers.
  auto [v2, i2] = sort(i64({4, 1, 2, 3, 0, 5}, {3, 2}), 0);
  CHECK_THAT(v2, TensorEqual(i64({0, 1, 2, 3, 4, 5}, {3, 2})));
  CHECK_THAT(i2, TensorEqual(i64({2, 0, 1, 1, 0, 2}, {3, 2})));
  CHECK(sort(Tensor::zeros({2, 0})).values.shape() == Shape{2, 0});
  CHECK_THAT(sort(Tensor::scalar(4.0)).indices, TensorEqual(Tensor::scalar(0, DType::I64)));
}

TEST_CASE("topk takes k = 0 to the dim's size, largest or smallest, ties by position", "[tensor]") {
  const Tensor x = f32({5, 1, 4, 1, 5, 9}, {2, 3});
  auto [v, i] = topk(x, 2);
  CHECK_THAT(v, TensorEqual(f32({5, 4, 9, 5}, {2, 2})));
  CHECK_THAT(i, TensorEqual(i64({0, 2, 2, 1}, {2, 2})));
  auto [vs, is] = topk(x, 1, 0, false);
  CHECK_THAT(vs, TensorEqual(f32({1, 1, 4}, {1, 3})));
  CHECK_THAT(is, TensorEqual(i64({1, 0, 0}, {1, 3})));
  CHECK(topk(x, 0).values.shape() == Shape{2, 0});
  CHECK(topk(x, 0).indices.dtype() == DType::I64);
  CHECK_THAT(topk(x, 3).values, TensorEqual(sort(x, -1, true).values));
  CHECK_THAT(topk(f32({1, 2, 2, 0}), 2).indices, TensorEqual(i64({1, 2})));
}

TEST_CASE("multinomial is a fixed function of the generator and follows the weights", "[tensor]") {
  const Tensor probs = f64({0.1, 0.0, 0.6, 0.3});
  Generator a(5);
  Generator b(5);
  const Tensor s = multinomial(probs, 4000, true, a);
  CHECK_THAT(s, TensorEqual(multinomial(probs, 4000, true, b)));
  CHECK(s.dtype() == DType::I64);
  // Counts near 400 / 0 / 2400 / 1200 (the bounds are 5 standard deviations of a binomial).
  const Tensor counts = sum(one_hot(s, 4), 0);
  const std::vector<std::int64_t> c = counts.to_vector<std::int64_t>();
  CHECK(std::abs(c[0] - 400) < 95);
  CHECK(c[1] == 0);
  CHECK(std::abs(c[2] - 2400) < 155);
  CHECK(std::abs(c[3] - 1200) < 145);
  // Without replacement every row is a set of distinct categories of nonzero weight.
  Generator g(9);
  const Tensor rows = Tensor::from_vector<float>({1, 1, 0, 1, 5, 0.5f, 0.5f, 0}, {2, 4});
  const Tensor t = multinomial(rows, 3, false, g);
  REQUIRE(t.shape() == Shape{2, 3});
  // Three draws from three categories of nonzero weight: each exactly once, whatever the order.
  const std::vector<std::vector<std::int64_t>> expected = {{0, 1, 3}, {0, 1, 2}};
  for (std::int64_t r = 0; r < 2; ++r) {
    std::vector<std::int64_t> drawn = t.select(0, r).to_vector<std::int64_t>();
    std::sort(drawn.begin(), drawn.end());
    CHECK(drawn == expected[static_cast<std::size_t>(r)]);
  }
}

TEST_CASE("masked_fill, tril and triu keep or replace by position", "[tensor]") {
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THAT(masked_fill(x, boolean({true, false, true}), -1.0),
             TensorEqual(f32({-1, 2, -1, -1, 5, -1}, {2, 3})));
  CHECK_THAT(masked_fill(x, Tensor::scalar(true, DType::Bool), 0),
             TensorEqual(Tensor::zeros({2, 3})));
  CHECK_THAT(masked_fill(i64({1, 2}), boolean({false, true}), 7), TensorEqual(i64({1, 7})));
  CHECK_THAT(tril(x), TensorEqual(f32({1, 0, 0, 4, 5, 0}, {2, 3})));
  CHECK_THAT(tril(x, -1), TensorEqual(f32({0, 0, 0, 4, 0, 0}, {2, 3})));
  CHECK_THAT(triu(x), TensorEqual(f32({1, 2, 3, 0, 5, 6}, {2, 3})));
  CHECK_THAT(triu(x, 1), TensorEqual(f32({0, 2, 3, 0, 0, 6}, {2, 3})));
  CHECK_THAT(triu(x, 5), TensorEqual(Tensor::zeros({2, 3})));
  CHECK(tril(Tensor::zeros({3, 0, 4})).shape() == Shape{3, 0, 4});
  CHECK_THAT(triangle_mask(2, 2, 0, true),
             TensorEqual(Tensor::from_vector<bool>({true, false, true, true}, {2, 2})));
}

TEST_CASE("bad input to the new ops is a typed error naming the op", "[tensor]") {
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor i = i64({1, 2});
  CHECK_THROWS_AS(sin(i), DTypeError);
  CHECK_THROWS_WITH(sin(i), Contains("sin: expected a floating dtype") && Contains("got I64"));
  CHECK_THROWS_WITH(leaky_relu(i), Contains("leaky_relu: expected a floating dtype"));
  CHECK_THROWS_AS(softplus(x, 0.0), ValueError);
  CHECK_THROWS_WITH(softplus(x, 0.0), Contains("softplus: expected a nonzero beta, got 0"));
  CHECK_THROWS_AS(clamp(x, std::nullopt, std::nullopt), ValueError);
  CHECK_THROWS_WITH(clamp(x, std::nullopt), Contains("clamp: expected at least one bound"));
  CHECK_THROWS_AS(cumsum(x, 2), IndexError);
  CHECK_THROWS_WITH(cumsum(x, 2), Contains("cumsum"));
  CHECK_THROWS_AS(sort(boolean({true})), DTypeError);
  CHECK_THROWS_WITH(sort(boolean({true})),
                    Contains("sort: expected a numeric dtype") && Contains("got Bool"));
  CHECK_THROWS_AS(topk(x, 4), ValueError);
  CHECK_THROWS_WITH(topk(x, 4), Contains("topk: expected k in [0, 3]") && Contains("got 4"));
  CHECK_THROWS_AS(topk(x, -1), ValueError);
  CHECK_THROWS_AS(topk(x, 1, -3), IndexError);
  CHECK_THROWS_AS(masked_fill(x, i, 0), DTypeError);
  CHECK_THROWS_WITH(masked_fill(x, i, 0), Contains("masked_fill: expected a Bool mask, got I64"));
  CHECK_THROWS_AS(masked_fill(x, Tensor::zeros({3, 3}, DType::Bool), 0), ShapeError);
  CHECK_THROWS_WITH(masked_fill(f32({1, 2, 3}), Tensor::zeros({2, 3}, DType::Bool), 0),
                    Contains("masked_fill: expected a mask broadcastable to [3], got [2, 3]"));
  CHECK_THROWS_AS(tril(f32({1, 2})), ShapeError);
  CHECK_THROWS_WITH(triu(f32({1, 2})),
                    Contains("triu: expected a tensor of at least 2 dims, got 1"));
  Generator g(1);
  CHECK_THROWS_WITH(multinomial(f64({0.5, -0.1}), 1, true, g),
                    Contains("multinomial: expected non-negative finite weights, got -0.1"));
  CHECK_THROWS_AS(multinomial(f64({0.0, 0.0}), 1, true, g), ValueError);
  CHECK_THROWS_WITH(multinomial(f64({0.0, 0.0}), 1, true, g),
                    Contains("expected a positive sum of weights"));
  CHECK_THROWS_WITH(multinomial(f64({1.0, 1.0}), 3, false, g),
                    Contains("expected num_samples <= 2") && Contains("got 3"));
  CHECK_THROWS_WITH(multinomial(f64({1.0, 0.0, 1.0}), 3, false, g),
                    Contains("categories of nonzero weight"));
  CHECK_THROWS_AS(multinomial(f64({1.0}), 0, true, g), ValueError);
  CHECK_THROWS_AS(multinomial(Tensor::ones({1, 2, 2}), 1, true, g), ShapeError);
  CHECK_THROWS_AS(multinomial(i, 1, true, g), DTypeError);
}

TEST_CASE("the stub backend reports the new ops as not implemented", "[tensor]") {
  StubBackend stub("stub");
  const Tensor x = f32({1, 2});
  for (const Op op :
       {Op::Sin, Op::Cos, Op::Silu, Op::Rsqrt, Op::Erf, Op::Log1p, Op::Expm1, Op::IsNan,
        Op::IsFinite, Op::LeakyRelu, Op::Elu, Op::Softplus, Op::Cumsum, Op::Sort}) {
    INFO(op_name(op));
    CHECK_FALSE(stub.supports(op, DType::F32));
    CHECK(op_name(op) != "unknown");
  }
  CHECK_THROWS_WITH(stub.unary(Op::Sin, x, x), Contains("not implemented: stub::sin"));
  CHECK_THROWS_WITH(stub.unary_params(Op::Elu, x, 1, 0, x), Contains("not implemented: stub::elu"));
  CHECK_THROWS_WITH(stub.cumsum(x, 0, false, x), Contains("not implemented: stub::cumsum"));
  CHECK_THROWS_WITH(stub.sort(x, 0, false, x, x), Contains("not implemented: stub::sort"));
}
