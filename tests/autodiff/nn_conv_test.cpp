// The convolution and pooling modules: parameters and their initialisation (PyTorch's bounds),
// forward equal to the functional ops, a small CNN end to end, and the modules' errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using Catch::Matchers::Contains;
using ruccl::testing::TensorEqual;

namespace {

double max_abs(const Tensor& t) { return ruccl::max(ruccl::abs(t)).item<double>(); }

}  // namespace

TEST_CASE("Conv2d has PyTorch's parameters and init bound 1/sqrt(fan_in)", "[autodiff][nn]") {
  Generator gen(3);
  nn::Conv2d conv(4, 6, {3, 2}, gen, {.padding = 1, .groups = 2, .dtype = DType::F64});
  const auto named = conv.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[0].second.shape() == Shape{6, 2, 3, 2});
  CHECK(named[1].first == "bias");
  CHECK(named[1].second.shape() == Shape{6});
  const double bound = 1.0 / std::sqrt(2.0 * 3 * 2);  // in / groups * kh * kw
  CHECK(max_abs(conv.weight().value()) <= bound);
  CHECK(max_abs(conv.weight().value()) > 0.5 * bound);  // drawn, not left at zero
  CHECK(max_abs(conv.bias().value()) <= bound);
  // The same generator state draws the same parameters.
  Generator again(3);
  nn::Conv2d twin(4, 6, {3, 2}, again, {.padding = 1, .groups = 2, .dtype = DType::F64});
  CHECK_THAT(twin.weight().value(), TensorEqual(conv.weight().value()));
  CHECK_THAT(twin.bias().value(), TensorEqual(conv.bias().value()));

  const Tensor x = Tensor::randn({2, 4, 5, 5}, gen, DType::F64);
  const Var y = conv(Var(x));
  CHECK_THAT(y.value(), TensorEqual(ruccl::conv2d(x, conv.weight().value(), conv.bias().value(),
                                                  {.padding = 1, .groups = 2})));
  nn::Conv2d no_bias(4, 6, 3, gen, {.bias = false});
  CHECK_FALSE(no_bias.has_bias());
  CHECK(no_bias.named_parameters().size() == 1);
  CHECK_THROWS_AS(no_bias.bias(), ValueError);
}

TEST_CASE("Conv1d has PyTorch's parameters and computes conv1d", "[autodiff][nn]") {
  Generator gen(4);
  nn::Conv1d conv(3, 5, 4, gen, {.stride = 2, .padding = 1, .dtype = DType::F64});
  CHECK(conv.weight().shape() == Shape{5, 3, 4});
  CHECK(max_abs(conv.weight().value()) <= 1.0 / std::sqrt(12.0));
  const Tensor x = Tensor::randn({2, 3, 9}, gen, DType::F64);
  CHECK_THAT(conv(Var(x)).value(),
             TensorEqual(ruccl::conv1d(x, conv.weight().value(), conv.bias().value(),
                                       {.stride = 2, .padding = 1})));
}

TEST_CASE("a small CNN of the modules trains one step end to end", "[autodiff][nn]") {
  Generator gen(5);
  nn::Sequential net{nn::Conv2d(1, 4, 3, gen, {.padding = 1}),
                     nn::ReLU(),
                     nn::MaxPool2d({.kernel = 2}),
                     nn::Conv2d(4, 6, 3, gen),
                     nn::AvgPool2d({.kernel = 2, .stride = 1}),
                     nn::AdaptiveAvgPool2d(2),
                     nn::Flatten(),
                     nn::Linear(24, 3, gen)};
  const Tensor x = Tensor::randn({2, 1, 12, 12}, gen);
  Var logits = net(Var(x));
  CHECK(logits.shape() == Shape{2, 3});
  Var loss = cross_entropy(logits, Tensor::from_vector<std::int64_t>({0, 2}));
  loss.backward();
  for (const auto& [path, p] : net.named_parameters()) {
    INFO(path);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().shape() == p.shape());
    CHECK(max_abs(p.grad()) > 0.0);
  }
}

TEST_CASE("the conv modules refuse bad construction and inputs", "[autodiff][nn]") {
  CHECK_THROWS_WITH(nn::Conv2d(4, 6, 3, {.groups = 4}),
                    Contains("Conv2d: expected groups dividing both channel counts (in 4, out "
                             "6), got 4"));
  CHECK_THROWS_AS(nn::Conv2d(4, 6, 0), ValueError);
  CHECK_THROWS_AS(nn::Conv1d(2, 2, 3, {.dtype = DType::I64}), DTypeError);
  nn::Conv2d conv(3, 2, 3);
  CHECK_THROWS_WITH(conv(Var(Tensor::zeros({1, 4, 5, 5}))),
                    Contains("expected a 4-d input with 3 channels in dim 1, got [1, 4, 5, 5]"));
  CHECK_THROWS_AS(conv(Var(Tensor::zeros({1, 3, 5, 5}, DType::F64))), DTypeError);
  nn::Flatten flatten;
  CHECK(flatten(Var(Tensor::zeros({2, 3, 4}))).shape() == Shape{2, 12});
}
