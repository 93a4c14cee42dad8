// The normalisation layers: float64 gradchecks of BatchNorm1d/2d (training and evaluation mode),
// GroupNorm and RMSNorm with respect to the input and the affine parameters; buffers and modes;
// the errors they raise.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "autodiff/autodiff.h"
#include "autodiff/nn/nn.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorNear;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, DType::F64);
}

// gradcheck of sum(layer(x) * c) with respect to x, weight and (when given) bias: the layer's
// parameters are replaced by the check's leaves (Param around a leaf Var), so their gradients
// are checked too.
void check_layer(nn::Module& layer, const Shape& x_shape, bool has_bias, std::uint64_t seed) {
  const Shape w_shape = layer.param("weight").shape();
  std::vector<Var> inputs{Var(randn(x_shape, seed), true),
                          Var(ruccl::add(randn(w_shape, seed + 1), 1.0), true)};
  if (has_bias) inputs.emplace_back(randn(w_shape, seed + 2), true);
  const Tensor c = randn(x_shape, seed + 3);
  GradcheckReport r = gradcheck(
      [&](const std::vector<Var>& in) {
        layer.set_param("weight", nn::Param(1, in[1]));
        if (has_bias) layer.set_param("bias", nn::Param(2, in[2]));
        return sum(mul(layer.forward(in[0]), Var(c)));
      },
      inputs);
  INFO(layer.type_name() << " on " << x_shape << ": " << r.message);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("BatchNorm1d and BatchNorm2d pass gradcheck in training and evaluation mode",
          "[autodiff][nn]") {
  for (bool training : {true, false}) {
    nn::BatchNorm1d bn1(3, {.dtype = DType::F64});
    nn::BatchNorm1d bn1l(2, {.dtype = DType::F64});
    nn::BatchNorm2d bn2(2, {.dtype = DType::F64});
    // Running statistics away from (0, 1), so evaluation mode checks a real affine map.
    bn2.running_mean().copy_(Tensor::from_vector<double>({0.5, -1.0}, {2}));
    bn2.running_var().copy_(Tensor::from_vector<double>({2.0, 0.25}, {2}));
    bn1.train(training);
    bn1l.train(training);
    bn2.train(training);
    check_layer(bn1, {4, 3}, true, 10);
    check_layer(bn1l, {3, 2, 3}, true, 20);
    check_layer(bn2, {2, 2, 2, 3}, true, 30);
  }
  // Without running statistics the batch's are used in evaluation mode too.
  nn::BatchNorm2d plain(2, {.affine = true, .track_running_stats = false, .dtype = DType::F64});
  plain.eval();
  check_layer(plain, {3, 2, 1, 2}, true, 40);
}

TEST_CASE("GroupNorm and RMSNorm pass gradcheck", "[autodiff][nn]") {
  nn::GroupNorm gn(2, 4, {.dtype = DType::F64});
  check_layer(gn, {2, 4, 3}, true, 50);
  nn::GroupNorm gn1(1, 3, {.dtype = DType::F64});  // one group: LayerNorm over [C, ...]
  check_layer(gn1, {2, 3, 2, 2}, true, 60);
  nn::RMSNorm rms(4, {.eps = 1e-6, .dtype = DType::F64});
  check_layer(rms, {3, 4}, false, 70);
  nn::RMSNorm rms2({2, 3}, {.dtype = DType::F64});
  check_layer(rms2, {2, 2, 3}, false, 80);
}

TEST_CASE("BatchNorm's running statistics are buffers, updated in training mode only",
          "[autodiff][nn]") {
  nn::BatchNorm1d bn(2, {.momentum = 0.5, .dtype = DType::F64});
  CHECK(bn.parameters().size() == 2);  // weight, bias: the statistics are not parameters
  const auto buffers = bn.named_buffers();
  REQUIRE(buffers.size() == 3);
  CHECK(buffers[0].first == "running_mean");
  CHECK(buffers[1].first == "running_var");
  CHECK(buffers[2].first == "num_batches_tracked");
  // Channel 0 holds {1, 3} (mean 2, unbiased var 2), channel 1 holds {0, 0}.
  const Tensor x = Tensor::from_vector<double>({1, 0, 3, 0}, {2, 2});
  const Tensor running_mean = bn.running_mean();  // shares the buffer's storage
  bn(x);
  CHECK_THAT(running_mean, TensorNear(Tensor::from_vector<double>({1.0, 0.0}, {2}), 0, 0));
  CHECK_THAT(bn.running_var(), TensorNear(Tensor::from_vector<double>({1.5, 0.5}, {2}), 0, 0));
  CHECK(bn.num_batches_tracked().item<std::int64_t>() == 1);
  bn.eval();
  const Tensor y = bn(x).value();
  CHECK(bn.num_batches_tracked().item<std::int64_t>() == 1);  // no update in evaluation mode
  CHECK_THAT(running_mean, TensorNear(Tensor::from_vector<double>({1.0, 0.0}, {2}), 0, 0));
  // (x - running_mean) / sqrt(running_var + eps)
  const double s0 = std::sqrt(1.5 + 1e-5);
  const double s1 = std::sqrt(0.5 + 1e-5);
  CHECK_THAT(y, TensorNear(Tensor::from_vector<double>({0.0 / s0, 0.0, 2.0 / s0, 0.0 / s1}, {2, 2}),
                           1e-15, 1e-15));
}

TEST_CASE("the norms name the layer and what they expected on bad input", "[autodiff][nn]") {
  const auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nn::BatchNorm1d bn1(3);
  CHECK_THROWS_AS(bn1(Tensor::zeros({4, 5})), ShapeError);
  CHECK(message([&] {
          bn1(Tensor::zeros({4, 5}));
        }) == "BatchNorm1d: expected an input [N, 3] or [N, 3, L], got [4, 5]");
  CHECK_THROWS_AS(bn1(Tensor::zeros({4, 3, 2, 2})), ShapeError);
  CHECK_THROWS_AS(bn1(Tensor::zeros({4, 3}, DType::F64)), DTypeError);
  CHECK(message([&] {
          bn1(Tensor::zeros({1, 3}));
        }).find("expected more than 1 value per channel in training mode, got 1") !=
        std::string::npos);
  nn::BatchNorm2d bn2(4);
  CHECK(message([&] {
          bn2(Tensor::zeros({2, 3, 2, 2}));
        }) == "BatchNorm2d: expected an input [N, 4, H, W], got [2, 3, 2, 2]");
  CHECK_THROWS_AS(bn2(Tensor::zeros({2, 4, 2})), ShapeError);
  CHECK_THROWS_AS(nn::BatchNorm2d(0), ValueError);
  CHECK_THROWS_AS(nn::BatchNorm2d(2, {.momentum = 1.5}), ValueError);
  CHECK_NOTHROW(bn2.running_mean());

  CHECK(message([] { nn::GroupNorm(4, 6); }) ==
        "GroupNorm: expected num_channels divisible by num_groups, got 6 channels and 4 groups");
  CHECK_THROWS_AS(nn::GroupNorm(4, 6), ValueError);
  nn::GroupNorm gn(2, 6);
  CHECK(message([&] {
          gn(Tensor::zeros({2, 4, 3}));
        }) == "GroupNorm: expected an input [N, 6, ...], got [2, 4, 3]");
  nn::RMSNorm rms(8);
  CHECK(message([&] {
          rms(Tensor::zeros({2, 7}));
        }) == "RMSNorm: expected an input whose last dim is 8, got [2, 7]");
  CHECK_THROWS_AS(rms(Tensor::zeros({2, 8}, DType::F64)), DTypeError);

  // The layer's dtype follows to(DType).
  gn.to(DType::F64);
  CHECK_NOTHROW(gn(Tensor::zeros({2, 6, 3}, DType::F64)));
  CHECK_THROWS_AS(gn(Tensor::zeros({2, 6, 3})), DTypeError);
  rms.to(DType::F64);
  CHECK_NOTHROW(rms(Tensor::zeros({2, 8}, DType::F64)));

  nn::BatchNorm1d no_stats(3, {.affine = false, .track_running_stats = false});
  CHECK(message([&] { no_stats.running_mean(); }) ==
        "BatchNorm1d: running_mean: built without track_running_stats");
  CHECK_THROWS_AS(no_stats.weight(), ValueError);
  CHECK(no_stats.named_buffers().empty());
  CHECK(no_stats.parameters().empty());
  CHECK_NOTHROW(no_stats(Tensor::ones({2, 3}, DType::F64)));  // no state: any floating dtype
  CHECK_THROWS_AS(no_stats(Tensor::ones({2, 3}, DType::I64)), DTypeError);
}
