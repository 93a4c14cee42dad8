// A float64 finite-difference check of every differentiable op, through the public gradcheck,
// including broadcasting and non-contiguous inputs; plus the documented ties and kinks.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;

namespace {

using Fn = std::function<Var(const std::vector<Var>&)>;

Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }
Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

// Random F64 values in +-[0.2, 1.2]: away from the kinks at 0 (relu, abs) and from ties.
Tensor away_from_zero(const Shape& shape, Generator& gen) {
  Tensor u = Tensor::rand(shape, gen, DType::F64);
  Tensor sign = ruccl::sub(
      ruccl::mul(ruccl::gt(Tensor::rand(shape, gen, DType::F64), 0.5).to(DType::F64), 2.0), 1.0);
  return ruccl::mul(ruccl::add(u, 0.2), sign);
}
// Random F64 values in [0.5, 1.5].
Tensor positive(const Shape& shape, Generator& gen) {
  return ruccl::add(Tensor::rand(shape, gen, DType::F64), 0.5);
}
Var leaf(Tensor t) { return Var(std::move(t), true); }

// A leaf holding a non-contiguous view (the test fails if it is not one).
Var strided(const Tensor& view) {
  REQUIRE_FALSE(view.is_contiguous());
  return Var(view, true);
}

void check(const Fn& fn, const std::vector<Var>& inputs) {
  GradcheckReport r = gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("binary elementwise ops pass gradcheck, with broadcasting", "[autodiff]") {
  Generator gen(1);
  Var a = leaf(away_from_zero({3, 4}, gen));
  Var row = leaf(away_from_zero({4}, gen));  // broadcast over rows
  Var col = leaf(positive({3, 1}, gen));     // broadcast over columns
  check([](const std::vector<Var>& v) { return add(v[0], v[1]); }, {a, row});
  check([](const std::vector<Var>& v) { return sub(v[0], v[1]); }, {a, col});
  check([](const std::vector<Var>& v) { return mul(v[0], v[1]); }, {row, col});
  check([](const std::vector<Var>& v) { return div(v[0], v[1]); }, {a, col});
  check([](const std::vector<Var>& v) { return pow(v[1], v[0]); }, {a, col});
  check([](const std::vector<Var>& v) { return maximum(v[0], v[1]); }, {a, row});
  check([](const std::vector<Var>& v) { return minimum(v[0], v[1]); }, {a, col});
  check([](const std::vector<Var>& v) { return v[0] * v[1] - v[1] / v[0] + v[0]; }, {a, col});
  // A constant operand gets no gradient (gradcheck checks that too).
  check([](const std::vector<Var>& v) { return mul(v[0], v[1]); }, {a, Var(a.value())});
}

TEST_CASE("elementwise ops with a scalar pass gradcheck", "[autodiff]") {
  Generator gen(2);
  Var x = leaf(positive({2, 3}, gen));
  check([](const std::vector<Var>& v) { return add(v[0], 2.5); }, {x});
  check([](const std::vector<Var>& v) { return sub(v[0], 2.5); }, {x});
  check([](const std::vector<Var>& v) { return mul(v[0], -1.5); }, {x});
  check([](const std::vector<Var>& v) { return div(v[0], 4.0); }, {x});
  check([](const std::vector<Var>& v) { return 3.0 - v[0]; }, {x});
  check([](const std::vector<Var>& v) { return 3.0 / v[0]; }, {x});
  check([](const std::vector<Var>& v) { return 2.0 * v[0] + 1.0; }, {x});
  check([](const std::vector<Var>& v) { return pow(v[0], 2.5); }, {x});
  check([](const std::vector<Var>& v) { return pow(v[0], 0); }, {x});
}

TEST_CASE("unary elementwise ops pass gradcheck", "[autodiff]") {
  Generator gen(3);
  Var x = leaf(away_from_zero({2, 5}, gen));
  Var p = leaf(positive({2, 5}, gen));
  check([](const std::vector<Var>& v) { return neg(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return exp(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return log(v[0]); }, {p});
  check([](const std::vector<Var>& v) { return sqrt(v[0]); }, {p});
  check([](const std::vector<Var>& v) { return abs(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return tanh(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return sigmoid(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return relu(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return gelu(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return gelu(mul(v[0], 4.0)); }, {x});  // tails
  // Through F32 the value is rounded to 24 bits: a wide step keeps the difference quotient exact
  // enough (the function is linear, so the step adds no truncation error).
  GradcheckOptions wide;
  wide.eps = 1e-2;
  wide.atol = 1e-4;
  GradcheckReport r = gradcheck(
      [](const std::vector<Var>& v) { return to(to(v[0], DType::F32), DType::F64); }, {x}, wide);
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("ops on non-contiguous inputs pass gradcheck", "[autodiff]") {
  Generator gen(4);
  Var t = leaf(away_from_zero({4, 3}, gen).transpose(0, 1));  // a [3, 4] strided view
  REQUIRE_FALSE(t.value().is_contiguous());
  Var w = leaf(away_from_zero({4, 2}, gen));
  check([](const std::vector<Var>& v) { return mul(exp(v[0]), v[0]); }, {t});
  check([](const std::vector<Var>& v) { return matmul(v[0], v[1]); }, {t, w});
  check([](const std::vector<Var>& v) { return sum(v[0], 1); }, {t});
  check([](const std::vector<Var>& v) { return softmax(v[0], 0); }, {t});
  check([](const std::vector<Var>& v) { return reshape(v[0], {12}); }, {t});
}

TEST_CASE("binary broadcasting ops pass gradcheck on transposed and narrowed inputs",
          "[autodiff]") {
  Generator gen(10);
  Var t = strided(away_from_zero({4, 3}, gen).transpose(0, 1));  // [3, 4], strides [1, 3]
  Var n = strided(away_from_zero({3, 6}, gen).narrow(1, 1, 4));  // [3, 4], strides [6, 1]
  Var row = strided(away_from_zero({4, 2}, gen).select(1, 0));   // [4], stride 2
  Var col = strided(positive({3, 2}, gen).narrow(1, 1, 1));      // [3, 1], strides [2, 1]
  check([](const std::vector<Var>& v) { return add(v[0], v[1]); }, {t, row});
  check([](const std::vector<Var>& v) { return sub(v[0], v[1]); }, {n, col});
  check([](const std::vector<Var>& v) { return mul(v[0], v[1]); }, {row, col});
  check([](const std::vector<Var>& v) { return mul(v[0], v[1]); }, {t, n});
  check([](const std::vector<Var>& v) { return div(v[0], v[1]); }, {t, col});
  check([](const std::vector<Var>& v) { return pow(v[1], v[0]); }, {n, col});
  check([](const std::vector<Var>& v) { return maximum(v[0], v[1]); }, {t, n});
  check([](const std::vector<Var>& v) { return minimum(v[0], v[1]); }, {n, row});
}

TEST_CASE("shape, index and loss ops pass gradcheck on transposed and narrowed inputs",
          "[autodiff]") {
  Generator gen(11);
  Var x = strided(away_from_zero({4, 3, 2}, gen).permute({2, 1, 0}));  // [2, 3, 4], [1, 2, 6]
  Var y = strided(away_from_zero({2, 3, 4}, gen).narrow(1, 1, 1));     // [2, 1, 4], [12, 4, 1]
  Var z = strided(away_from_zero({2, 3, 6}, gen).narrow(2, 1, 4));     // [2, 3, 4], [18, 6, 1]
  check([](const std::vector<Var>& v) { return reshape(v[0], {6, -1}); }, {x});
  check([](const std::vector<Var>& v) { return transpose(v[0], 0, 2); }, {z});
  check([](const std::vector<Var>& v) { return permute(v[0], {2, 0, 1}); }, {x});
  check([](const std::vector<Var>& v) { return narrow(v[0], 2, 1, 2); }, {x});
  check([](const std::vector<Var>& v) { return expand(v[0], {3, 2, 5, 4}); }, {y});
  check([](const std::vector<Var>& v) { return squeeze(v[0], 1); }, {y});
  check([](const std::vector<Var>& v) { return unsqueeze(v[0], -1); }, {x});
  check([](const std::vector<Var>& v) { return flatten(v[0], 1); }, {z});
  check([](const std::vector<Var>& v) { return contiguous(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return cat({v[0], v[1], v[0]}, 1); }, {x, y});
  check([](const std::vector<Var>& v) { return stack({v[0], v[1], v[0]}, -1); }, {x, z});
  check(
      [](const std::vector<Var>& v) {
        std::vector<Var> p = split(v[0], 3, 2);  // pieces 3 and 1
        std::vector<Var> q = chunk(v[1], 2, -1);
        return add(sum(mul(p[0], p[0])), sum(mul(mul(q[0], q[1]), p[1])));
      },
      {x, z});

  Var t = strided(away_from_zero({4, 3}, gen).transpose(0, 1));  // [3, 4]
  Var n = strided(away_from_zero({3, 5}, gen).narrow(1, 1, 4));  // [3, 4], strides [5, 1]
  Tensor rows = Tensor::from_vector<std::int64_t>({2, 0, 2, 2});
  Tensor cols = Tensor::from_vector<std::int64_t>({3, 3, 0, 1, 1, 2}, {2, 3});
  check([&](const std::vector<Var>& v) { return index_select(v[0], 0, rows); }, {t});
  check(
      [&](const std::vector<Var>& v) {
        return index_select(v[0], 1, Tensor::from_vector<std::int64_t>({1, 1, 3}));
      },
      {n});
  check([&](const std::vector<Var>& v) { return gather(v[0], 1, cols); }, {t});
  check(
      [&](const std::vector<Var>& v) {
        return gather(v[0], 0, Tensor::from_vector<std::int64_t>({2, 2, 0, 1, 0, 2}, {2, 3}));
      },
      {n});
  Tensor cond = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  check([&](const std::vector<Var>& v) { return where(cond, v[0], v[1]); },
        {strided(away_from_zero({3, 2}, gen).transpose(0, 1)),
         strided(away_from_zero({3, 2}, gen).select(1, 1))});

  Var logits = strided(away_from_zero({4, 5}, gen).transpose(0, 1));  // [5, 4]
  Tensor targets = Tensor::from_vector<std::int64_t>({0, 3, 3, 1, 2});
  check([&](const std::vector<Var>& v) { return cross_entropy(v[0], targets); }, {logits});
  check([&](const std::vector<Var>& v) { return cross_entropy(v[0], targets, Reduction::Sum); },
        {logits});
  check(
      [&](const std::vector<Var>& v) { return cross_entropy(v[0], Tensor::scalar(2, DType::I64)); },
      {strided(away_from_zero({4, 2}, gen).select(1, 1))});
  Var pred = strided(away_from_zero({3, 4}, gen).narrow(1, 1, 2));    // [3, 2]
  Var target = strided(away_from_zero({2, 3}, gen).transpose(0, 1));  // [3, 2]
  check([](const std::vector<Var>& v) { return mse_loss(v[0], v[1]); }, {pred, target});
  check([](const std::vector<Var>& v) { return mse_loss(v[0], v[1], Reduction::Sum); },
        {pred, target});
}

TEST_CASE("reductions pass gradcheck over dims, with and without keepdim", "[autodiff]") {
  Generator gen(5);
  Var x = leaf(away_from_zero({2, 3, 4}, gen));
  check([](const std::vector<Var>& v) { return sum(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return sum(v[0], {0, 2}); }, {x});
  check([](const std::vector<Var>& v) { return sum(v[0], -1, true); }, {x});
  check([](const std::vector<Var>& v) { return mean(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return mean(v[0], {1}, true); }, {x});
  check([](const std::vector<Var>& v) { return max(v[0], 1); }, {x});
  check([](const std::vector<Var>& v) { return max(v[0], -1, true); }, {x});
  check([](const std::vector<Var>& v) { return min(v[0], 0); }, {x});
  check([](const std::vector<Var>& v) { return max(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return prod(v[0], 1); }, {x});
  check([](const std::vector<Var>& v) { return prod(v[0], -2, true); }, {x});
  check([](const std::vector<Var>& v) { return prod(v[0]); }, {x});
  // prod is a polynomial: exact gradients with one zero or two zeros in a row, and an empty dim.
  Var zeros = leaf(f64({2, 0, 3, 0.5, 0, 0}, {2, 3}));
  check([](const std::vector<Var>& v) { return prod(v[0], 1); }, {zeros});
  check([](const std::vector<Var>& v) { return prod(v[0], 0); }, {zeros});
  Var p = leaf(f64({2, 0, 3}));
  prod(p).backward();
  CHECK_THAT(p.grad(), TensorEqual(f64({0, 6, 0})));
  Var empty = leaf(Tensor::zeros({2, 0}, DType::F64));
  sum(prod(empty, 1)).backward();
  CHECK(empty.grad().shape() == Shape{2, 0});
  check([](const std::vector<Var>& v) { return min(v[0]); }, {x});
  check([](const std::vector<Var>& v) { return var(v[0], {2}); }, {x});
  check([](const std::vector<Var>& v) { return var(v[0], {0, 1}, 0, true); }, {x});
  check([](const std::vector<Var>& v) { return softmax(v[0], 1); }, {x});
  check([](const std::vector<Var>& v) { return log_softmax(v[0], -1); }, {x});
}

TEST_CASE("matmul and linear pass gradcheck for 1-d, 2-d and batched operands", "[autodiff]") {
  Generator gen(6);
  auto r = [&](const Shape& s) { return leaf(away_from_zero(s, gen)); };
  auto mm = [](const std::vector<Var>& v) { return matmul(v[0], v[1]); };
  check(mm, {r({3}), r({3})});
  check(mm, {r({3}), r({3, 2})});
  check(mm, {r({2, 3}), r({3})});
  check(mm, {r({2, 3}), r({3, 4})});
  check(mm, {r({2, 2, 3}), r({3, 2})});        // batch broadcast on the right
  check(mm, {r({3}), r({2, 3, 2})});           // 1-d against a batch
  check(mm, {r({2, 1, 2, 3}), r({3, 3, 2})});  // both batch dims broadcast
  auto lin = [](const std::vector<Var>& v) { return linear(v[0], v[1], v[2]); };
  check(lin, {r({4, 3}), r({2, 3}), r({2})});
  check(lin, {r({2, 2, 3}), r({2, 3}), r({2})});
  check(lin, {r({3}), r({2, 3}), r({2})});
  check([](const std::vector<Var>& v) { return linear(v[0], v[1]); }, {r({4, 3}), r({2, 3})});
  check(lin, {Var(away_from_zero({4, 3}, gen)), r({2, 3}), r({2})});  // data needs no grad
}

TEST_CASE("shape ops pass gradcheck", "[autodiff]") {
  Generator gen(7);
  Var x = leaf(away_from_zero({2, 3, 4}, gen));
  Var y = leaf(away_from_zero({2, 1, 4}, gen));
  check([](const std::vector<Var>& v) { return reshape(v[0], {6, -1}); }, {x});
  check([](const std::vector<Var>& v) { return transpose(v[0], 0, 2); }, {x});
  check([](const std::vector<Var>& v) { return permute(v[0], {2, 0, 1}); }, {x});
  check([](const std::vector<Var>& v) { return narrow(v[0], 1, 1, 2); }, {x});
  check([](const std::vector<Var>& v) { return expand(v[0], {3, 2, 5, 4}); }, {y});
  check([](const std::vector<Var>& v) { return squeeze(v[0], 1); }, {y});
  check([](const std::vector<Var>& v) { return unsqueeze(v[0], -1); }, {x});
  check([](const std::vector<Var>& v) { return flatten(v[0], 1); }, {x});
  check([](const std::vector<Var>& v) { return contiguous(transpose(v[0], 0, 1)); }, {x});
  check([](const std::vector<Var>& v) { return cat({v[0], v[1], v[0]}, 1); }, {x, y});
  check(
      [](const std::vector<Var>& v) {
        return stack({v[0], v[0], v[1]}, -1);
      },
      {leaf(away_from_zero({3}, gen)), leaf(away_from_zero({3}, gen))});
  check(
      [](const std::vector<Var>& v) {
        std::vector<Var> p = split(v[0], 3, 2);  // pieces 3 and 1
        return add(sum(mul(p[0], p[0])), sum(mul(p[1], 3.0)));
      },
      {x});
  check(
      [](const std::vector<Var>& v) {
        std::vector<Var> p = split(v[0], std::vector<std::int64_t>{1, 2}, 1);
        return sub(sum(p[1], 1), mul(squeeze(p[0], 1), 2.0));
      },
      {x});
  check(
      [](const std::vector<Var>& v) {
        std::vector<Var> p = chunk(v[0], 2, -1);
        return mul(p[0], p[1]);
      },
      {x});
}

TEST_CASE("indexing ops pass gradcheck, repeated indices accumulating", "[autodiff]") {
  Generator gen(8);
  Var x = leaf(away_from_zero({4, 3}, gen));
  Tensor rows = Tensor::from_vector<std::int64_t>({3, 0, 3, 3});
  Tensor cols = Tensor::from_vector<std::int64_t>({2, 2, 0, 1, 1, 1}, {2, 3});
  check([&](const std::vector<Var>& v) { return index_select(v[0], 0, rows); }, {x});
  check(
      [&](const std::vector<Var>& v) {
        return index_select(v[0], 1, Tensor::from_vector<std::int64_t>({1, 1}));
      },
      {x});
  check([&](const std::vector<Var>& v) { return gather(v[0], 1, cols); }, {x});
  Tensor cond = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  check([&](const std::vector<Var>& v) { return where(cond, v[0], v[1]); },
        {leaf(away_from_zero({2, 3}, gen)), leaf(away_from_zero({3}, gen))});
}

TEST_CASE("losses pass gradcheck with mean and sum reductions", "[autodiff]") {
  Generator gen(9);
  Var logits = leaf(away_from_zero({5, 4}, gen));
  Tensor targets = Tensor::from_vector<std::int64_t>({0, 3, 3, 1, 2});
  check([&](const std::vector<Var>& v) { return cross_entropy(v[0], targets); }, {logits});
  check([&](const std::vector<Var>& v) { return cross_entropy(v[0], targets, Reduction::Sum); },
        {logits});
  check(
      [&](const std::vector<Var>& v) { return cross_entropy(v[0], Tensor::scalar(2, DType::I64)); },
      {leaf(away_from_zero({4}, gen))});
  Var pred = leaf(away_from_zero({3, 2}, gen));
  Var target = leaf(away_from_zero({3, 2}, gen));
  check([](const std::vector<Var>& v) { return mse_loss(v[0], v[1]); }, {pred, target});
  check([](const std::vector<Var>& v) { return mse_loss(v[0], v[1], Reduction::Sum); },
        {pred, target});
}

TEST_CASE("cross_entropy rejects bad targets with typed errors", "[autodiff]") {
  Var logits(f64({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  CHECK_THROWS_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({0, 3})), IndexError);
  CHECK_THROWS_AS(cross_entropy(logits, f64({0, 1})), DTypeError);
  CHECK_THROWS_AS(cross_entropy(logits, Tensor::from_vector<std::int64_t>({0})), ShapeError);
}

TEST_CASE("kinks and ties follow PyTorch: relu and abs at 0, max ties, maximum ties",
          "[autodiff]") {
  Var x(f64({-1, 0, 2}), true);
  sum(relu(x)).backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({0, 0, 1})));
  x.zero_grad();
  sum(abs(x)).backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({-1, 0, 1})));

  Var t(f64({3, 1, 3, 3, 2, 0}, {2, 3}), true);
  sum(max(t, 1)).backward();  // along a dim: all to the first maximum
  CHECK_THAT(t.grad(), TensorEqual(f64({1, 0, 0, 1, 0, 0}, {2, 3})));
  t.zero_grad();
  max(t).backward();  // whole tensor: split evenly among the three 3s
  CHECK_THAT(t.grad(), TensorEqual(f64({1.0 / 3, 0, 1.0 / 3, 1.0 / 3, 0, 0}, {2, 3})));

  Var a(f64({1, 2, 3}), true);
  Var b(f64({1, 5, 0}), true);
  sum(maximum(a, b)).backward();  // tie at 0: half each
  CHECK_THAT(a.grad(), TensorEqual(f64({0.5, 0, 1})));
  CHECK_THAT(b.grad(), TensorEqual(f64({0.5, 1, 0})));
}

TEST_CASE("view gradients come back in the input's shape", "[autodiff]") {
  Var x(f64({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  Var y = transpose(x, 0, 1);
  y.backward(f64({10, 40, 20, 50, 30, 60}, {3, 2}));
  CHECK_THAT(x.grad(), TensorEqual(f64({10, 20, 30, 40, 50, 60}, {2, 3})));
  x.zero_grad();
  narrow(x, 1, 1, 2).backward(f64({1, 2, 3, 4}, {2, 2}));
  CHECK_THAT(x.grad(), TensorEqual(f64({0, 1, 2, 0, 3, 4}, {2, 3})));
}

TEST_CASE("sum_to undoes broadcasting and rejects shapes that do not broadcast", "[autodiff]") {
  Tensor g = Tensor::ones({2, 3, 4}, DType::F64);
  CHECK_THAT(sum_to(g, {3, 1}), TensorEqual(Tensor::full({3, 1}, 8.0, DType::F64)));
  CHECK_THAT(sum_to(g, {4}), TensorEqual(Tensor::full({4}, 6.0, DType::F64)));
  CHECK_THAT(sum_to(g, {}), TensorEqual(Tensor::full({}, 24.0, DType::F64)));
  CHECK_THROWS_AS(sum_to(g, {2, 4}), ShapeError);
  CHECK_THROWS_AS(sum_to(g, {1, 2, 3, 4}), ShapeError);
}

TEST_CASE("prod along a long dim (two-level backward) is exact with and without zeros",
          "[autodiff]") {
  // 100 elements of 1.01 with a zero at 37: only element 37 gets a gradient, 1.01^99.
  std::vector<double> v(100, 1.01);
  v[37] = 0.0;
  Var z = leaf(f64(v));
  prod(z).backward();
  std::vector<double> expected(100, 0.0);
  expected[37] = std::pow(1.01, 99);
  CHECK_THAT(z.grad(), ruccl::testing::TensorNear(f64(expected), 1e-12, 1e-12));
  // Without zeros, element i gets prod / x_i; 101 elements pad the 11 x 10 blocks with ones.
  std::vector<double> w(101);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.9 + 0.002 * static_cast<double>(i);
  Var x = leaf(f64(w));
  prod(x).backward();
  double total = 1.0;
  for (double e : w) total *= e;
  std::vector<double> others(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) others[i] = total / w[i];
  CHECK_THAT(x.grad(), ruccl::testing::TensorNear(f64(others), 1e-12, 1e-12));
  // Against finite differences, along either dim of a [2, 70] input with a zero in each row.
  Generator gen(21);
  Tensor t = ruccl::add(ruccl::mul(Tensor::rand({2, 70}, gen, DType::F64), 0.2), 0.9);
  t.narrow(1, 5, 1).fill_(0.0);
  Var y = leaf(t);
  check([](const std::vector<Var>& in) { return prod(in[0], 1); }, {y});
  check([](const std::vector<Var>& in) { return prod(in[0], 0); }, {leaf(t.transpose(0, 1))});
}
