// A float64 finite-difference check, through the public gradcheck, of every differentiable op of
// issue 30 (element-wise math, clamp, cumsum, sort/topk values, masking), on contiguous and
// strided inputs; plus the documented kinks (clamp's bounds, the masked positions).
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;

namespace {

using Vars = std::vector<Var>;

// Random F64 values in +-[0.2, 1.2]: away from the kinks at 0 (leaky_relu, elu) and from ties.
Tensor away_from_zero(const Shape& shape, Generator& gen) {
  Tensor u = ruccl::add(Tensor::rand(shape, gen, DType::F64), 0.2);
  Tensor sign = ruccl::sub(
      ruccl::mul(ruccl::gt(Tensor::rand(shape, gen, DType::F64), 0.5).to(DType::F64), 2.0), 1.0);
  return ruccl::mul(u, sign);
}
Var leaf(Tensor t) { return Var(std::move(t), true); }

void check(const std::function<Var(const Vars&)>& fn, const Vars& inputs) {
  GradcheckReport r = gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("the element-wise math of issue 30 passes gradcheck", "[autodiff]") {
  Generator gen(30);
  Var x = leaf(away_from_zero({2, 5}, gen));
  Var p = leaf(ruccl::add(Tensor::rand({2, 5}, gen, DType::F64), 0.5));  // in [0.5, 1.5]
  Var t = leaf(away_from_zero({5, 2}, gen).transpose(0, 1));             // strided [2, 5]
  REQUIRE_FALSE(t.value().is_contiguous());
  for (const Var& v : {x, t}) {
    check([](const Vars& a) { return sin(a[0]); }, {v});
    check([](const Vars& a) { return cos(a[0]); }, {v});
    check([](const Vars& a) { return silu(mul(a[0], 3.0)); }, {v});
    check([](const Vars& a) { return erf(a[0]); }, {v});
    check([](const Vars& a) { return expm1(a[0]); }, {v});
    check([](const Vars& a) { return leaky_relu(a[0]); }, {v});
    check([](const Vars& a) { return leaky_relu(a[0], 0.3); }, {v});
    check([](const Vars& a) { return elu(a[0]); }, {v});
    check([](const Vars& a) { return elu(a[0], 0.5); }, {v});
    check([](const Vars& a) { return softplus(a[0]); }, {v});
    // 10 x in +-[2, 12] straddles threshold 5: both the log branch and the linear region.
    check([](const Vars& a) { return softplus(mul(a[0], 10.0), 1.0, 5.0); }, {v});
    check([](const Vars& a) { return softplus(a[0], 2.0, 20.0); }, {v});
  }
  check([](const Vars& a) { return rsqrt(a[0]); }, {p});
  check([](const Vars& a) { return log1p(a[0]); }, {p});
  check([](const Vars& a) { return log1p(mul(a[0], 0.5)); }, {x});  // +-[0.1, 0.6]: > -1
}

TEST_CASE("clamp passes gradcheck with either bound and lets no gradient past one", "[autodiff]") {
  Generator gen(31);
  Var x = leaf(away_from_zero({3, 4}, gen));
  check([](const Vars& a) { return clamp(a[0], -0.7); }, {x});
  check([](const Vars& a) { return clamp(a[0], std::nullopt, 0.5); }, {x});
  check([](const Vars& a) { return clamp(a[0], -0.7, 0.5); }, {x});
  // At a bound the gradient passes (torch: min <= x <= max); outside it is zero.
  Var b = leaf(Tensor::from_vector<double>({-2.0, -1.0, 0.0, 1.0, 2.0}));
  clamp(b, -1.0, 1.0).sum().backward();
  CHECK_THAT(b.grad(), TensorEqual(Tensor::from_vector<double>({0, 1, 1, 1, 0})));
}

TEST_CASE("cumsum passes gradcheck along every dim, its backward summing from the end",
          "[autodiff]") {
  Generator gen(32);
  Var x = leaf(away_from_zero({3, 4}, gen));
  Var t = leaf(away_from_zero({4, 3}, gen).transpose(0, 1));
  for (const Var& v : {x, t}) {
    check([](const Vars& a) { return cumsum(a[0], 0); }, {v});
    check([](const Vars& a) { return cumsum(a[0], -1); }, {v});
  }
  Var y = leaf(Tensor::from_vector<double>({1, 2, 3}));
  mul(cumsum(y, 0), Var(Tensor::from_vector<double>({1, 10, 100}))).sum().backward();
  CHECK_THAT(y.grad(), TensorEqual(Tensor::from_vector<double>({111, 110, 100})));
}

TEST_CASE("sort and topk values pass gradcheck; the gradient lands at the indices", "[autodiff]") {
  Generator gen(33);
  Var x = leaf(away_from_zero({3, 5}, gen));
  Var t = leaf(away_from_zero({5, 3}, gen).transpose(0, 1));
  for (const Var& v : {x, t}) {
    check([](const Vars& a) { return sort(a[0]).values; }, {v});
    check([](const Vars& a) { return sort(a[0], 0, true).values; }, {v});
    check([](const Vars& a) { return topk(a[0], 2).values; }, {v});
    check([](const Vars& a) { return topk(a[0], 1, 0, false).values; }, {v});
    check([](const Vars& a) { return mul(topk(a[0], 5).values, a[0]); }, {v});
  }
  Var y = leaf(Tensor::from_vector<double>({3, 1, 2}));
  VarIndices top = topk(y, 2);
  CHECK_THAT(top.indices, TensorEqual(Tensor::from_vector<std::int64_t>({0, 2})));
  mul(top.values, Var(Tensor::from_vector<double>({10, 20}))).sum().backward();
  CHECK_THAT(y.grad(), TensorEqual(Tensor::from_vector<double>({10, 0, 20})));
}

TEST_CASE("masked_fill, tril and triu pass gradcheck; masked positions get no gradient",
          "[autodiff]") {
  Generator gen(34);
  Var x = leaf(away_from_zero({2, 3, 4}, gen));
  const Tensor mask = ruccl::gt(Tensor::rand({3, 4}, gen, DType::F64), 0.5);  // broadcast
  check([mask](const Vars& a) { return masked_fill(a[0], mask, -1e9); }, {x});
  for (const std::int64_t d : {-1, 0, 2}) {
    check([d](const Vars& a) { return tril(a[0], d); }, {x});
    check([d](const Vars& a) { return triu(a[0], d); }, {x});
  }
  Var y = leaf(Tensor::ones({2, 2}, DType::F64));
  masked_fill(y, Tensor::from_vector<bool>({true, false}), 5.0).sum().backward();
  CHECK_THAT(y.grad(), TensorEqual(Tensor::from_vector<double>({0, 1, 0, 1}, {2, 2})));
  Var z = leaf(Tensor::ones({2, 2}, DType::F64));
  tril(z).sum().backward();
  CHECK_THAT(z.grad(), TensorEqual(Tensor::from_vector<double>({1, 0, 1, 1}, {2, 2})));
}
