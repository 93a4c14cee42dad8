// Var::index / autodiff::index: one node whose backward writes the gradient into zeros of the
// input's shape; gradients against PyTorch for every golden pattern and a float64 gradcheck.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_tensors.h"
#include "tests/tensor/indexing_patterns.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using namespace ruccl::indexing;
using ruccl::testing::TensorEqual;

namespace {}  // namespace

TEST_CASE("Var::index values and gradients match PyTorch for every golden pattern", "[autodiff]") {
  const Tensor input = ruccl::testing::indexing_golden().at("input").at("x");
  for (const auto& [name, pattern] : ruccl::testing::golden_patterns()) {
    INFO("pattern " << name);
    const auto& c = ruccl::testing::indexing_golden().at(name);
    Var x(input.clone(), true);
    Var y = x.index(std::span<const TensorIndex>(pattern));
    CHECK_THAT(y.value(), TensorEqual(c.at("out")));
    REQUIRE(y.grad_fn() != nullptr);
    CHECK(std::string(y.grad_fn()->name()) == "index");
    CHECK(y.grad_fn()->num_inputs() == 1);
    sum(y * c.at("w")).backward();
    // Each gradient element is one w value or (repeated tensor entries) a sum of two, in the
    // same order as torch's accumulation: exact.
    CHECK_THAT(x.grad(), TensorEqual(c.at("grad")));
  }
}

TEST_CASE("index passes a float64 gradcheck for several patterns", "[autodiff]") {
  Generator gen(31);
  Var x(Tensor::randn({3, 4, 2}, gen, DType::F64), true);
  // A non-contiguous input too: the backward's zeros have the input's shape, not its strides.
  Var xt(Tensor::randn({2, 4, 3}, gen, DType::F64).transpose(0, 2), true);
  REQUIRE_FALSE(xt.value().is_contiguous());
  const Tensor rows = Tensor::from_vector<std::int64_t>({1, -1, 1, 0});
  const Tensor mask = Tensor::from_vector<bool>({true, false, true, true});
  const std::vector<std::vector<TensorIndex>> patterns = {
      {Slice(0, 2), 3},
      {Slice(), Slice(1, None), -1},
      {Ellipsis, Slice(None, None, 2)},
      {None, -1, Slice(None, None, 3), None},
      {Slice(1, None), rows},  // repeated entries: their gradients add up
      {Slice(), mask, 0},
      {1, Ellipsis},
      {Slice(-100, 100, 2), Slice(3, 1)},  // clamped, and an empty slice
  };
  for (std::size_t p = 0; p < patterns.size(); ++p) {
    const std::vector<TensorIndex>& pattern = patterns[p];
    for (const Var& input : {x, xt}) {
      GradcheckReport r = gradcheck(
          [&pattern](const std::vector<Var>& in) {
            return index(in[0], std::span<const TensorIndex>(pattern)) * 2.0;
          },
          {input});
      INFO("pattern " << p << ": " << r.message);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("index of a Var records one node and nothing under NoGradGuard or for a constant",
          "[autodiff]") {
  Var x(Tensor::arange(0, 12, 1, DType::F64).reshape({3, 4}), true);
  Var y = x.index({Slice(), Slice(1, None, 2)});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.value().storage() == x.value().storage());  // the forward is a view, as Tensor::index
  y.sum().backward();
  Tensor expected = Tensor::zeros({3, 4}, DType::F64);
  expected.index_put_({Slice(), Slice(1, None, 2)}, 1.0);
  CHECK_THAT(x.grad(), TensorEqual(expected));
  {
    NoGradGuard no_grad;
    CHECK(x.index({0}).grad_fn() == nullptr);
  }
  Var c(x.value());  // requires_grad false
  CHECK(c.index({0}).grad_fn() == nullptr);
  CHECK_THAT(c.index({0}).value(), TensorEqual(x.value().index({0})));
}

TEST_CASE("index errors on a Var name the dim the index and the size", "[autodiff]") {
  Var x(Tensor::zeros({3, 4}, DType::F64), true);
  CHECK_THROWS_AS(x.index({0, 7}), IndexError);
  CHECK_THROWS_WITH(x.index({0, 7}),
                    "index: expected an index in [-4, 4) for dim 1 of size 4, got 7");
  CHECK_THROWS_WITH(index(x, {Slice(None, None, -2)}),
                    Catch::Contains("index: expected a slice step > 0 for dim 0, got -2"));
}
