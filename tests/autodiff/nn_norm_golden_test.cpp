// BatchNorm1d/2d, GroupNorm and RMSNorm against PyTorch 1.13 in F32 and F64: train-mode outputs and
// gradients, running statistics after two training steps, eval-mode outputs
// (tools/golden/nn_norm_golden.py, data in tests/data/nn_norm_golden.txt).
//
// Tolerances (|ours - torch| <= atol + rtol * |torch|): F64 rtol 1e-10, atol 1e-12 (summation
// order only); F32 rtol 1e-5, atol 2e-6 (a few ulp: torch accumulates the statistics in float
// with other orders, we in double, and a normalised value is a quotient of rounded terms).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "autodiff/autodiff.h"
#include "autodiff/nn/nn.h"
#include "tests/support/golden_tensors.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using autodiff::Var;
using ruccl::testing::TensorNear;

namespace {

Tensor G(const std::string& name) {
  return ruccl::testing::golden_tensor("nn_norm_golden.txt", name);
}

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType dtype) {
  return dtype == DType::F64 ? Tolerance{1e-10, 1e-12} : Tolerance{1e-5, 2e-6};
}

template <typename BN>
void check_batch_norm(const std::string& name, DType dtype, nn::BatchNormOptions options) {
  const std::string c = name + (dtype == DType::F64 ? "_f64." : "_f32.");
  INFO(c);
  const auto [rtol, atol] = tolerance(dtype);
  options.dtype = dtype;
  BN bn(G(c + "w").numel(), options);
  bn.weight().set_value(G(c + "w"));
  bn.bias().set_value(G(c + "b"));
  Var x1(G(c + "x1"), true);
  Var y1 = bn(x1);
  autodiff::sum(autodiff::mul(y1, Var(G(c + "c")))).backward();
  const Tensor y2 = bn(G(c + "x2")).value();
  bn.eval();
  const Tensor y3 = bn(G(c + "x3")).value();
  CHECK_THAT(y1.value(), TensorNear(G(c + "y1"), rtol, atol));
  CHECK_THAT(y2, TensorNear(G(c + "y2"), rtol, atol));
  CHECK_THAT(y3, TensorNear(G(c + "y3"), rtol, atol));
  CHECK_THAT(bn.running_mean(), TensorNear(G(c + "running_mean"), rtol, atol));
  CHECK_THAT(bn.running_var(), TensorNear(G(c + "running_var"), rtol, atol));
  CHECK(bn.num_batches_tracked().template item<std::int64_t>() ==
        G(c + "num_batches_tracked").item<std::int64_t>());
  CHECK_THAT(x1.grad(), TensorNear(G(c + "grad_x1"), rtol, atol));
  CHECK_THAT(bn.weight().grad(), TensorNear(G(c + "grad_w"), rtol, atol));
  CHECK_THAT(bn.bias().grad(), TensorNear(G(c + "grad_b"), rtol, atol));
}

// Output and gradients of an affine norm layer against the case's y, grad_x, grad_w and, when
// the layer has a bias, grad_b.
template <typename Layer>
void check_norm(Layer& layer, const std::string& c) {
  INFO(c);
  const auto [rtol, atol] = tolerance(G(c + "x").dtype());
  Var x(G(c + "x"), true);
  Var y = layer(x);
  autodiff::sum(autodiff::mul(y, Var(G(c + "c")))).backward();
  CHECK_THAT(y.value(), TensorNear(G(c + "y"), rtol, atol));
  CHECK_THAT(x.grad(), TensorNear(G(c + "grad_x"), rtol, atol));
  CHECK_THAT(layer.weight().grad(), TensorNear(G(c + "grad_w"), rtol, atol));
  if constexpr (requires { layer.bias(); }) {
    CHECK_THAT(layer.bias().grad(), TensorNear(G(c + "grad_b"), rtol, atol));
  }
}

}  // namespace

TEST_CASE("BatchNorm1d on [N, C] and [N, C, L] matches PyTorch in both modes, F32 and F64",
          "[autodiff][nn]") {
  for (DType dtype : {DType::F32, DType::F64}) {
    check_batch_norm<nn::BatchNorm1d>("bn1d_nc", dtype, {});
    check_batch_norm<nn::BatchNorm1d>("bn1d_ncl", dtype, {.momentum = 0.3});
  }
}

TEST_CASE("BatchNorm2d matches PyTorch, with a momentum and with a cumulative average",
          "[autodiff][nn]") {
  for (DType dtype : {DType::F32, DType::F64}) {
    check_batch_norm<nn::BatchNorm2d>("bn2d", dtype, {});
    check_batch_norm<nn::BatchNorm2d>("bn2d_cma", dtype, {.eps = 1e-3, .momentum = std::nullopt});
  }
}

TEST_CASE("GroupNorm matches PyTorch on 3-d and 4-d inputs, F32 and F64", "[autodiff][nn]") {
  for (const char* dt : {"_f32.", "_f64."}) {
    for (auto [name, groups] : {std::pair{"gn", 2}, std::pair{"gn_4d", 3}}) {
      const std::string c = std::string(name) + dt;
      const Tensor w = G(c + "w");
      nn::GroupNorm gn(groups, w.numel(), {.dtype = w.dtype()});
      gn.weight().set_value(w);
      gn.bias().set_value(G(c + "b"));
      check_norm(gn, c);
    }
  }
}

TEST_CASE("RMSNorm matches torch 2.4's formula, with an eps and with the dtype's epsilon",
          "[autodiff][nn]") {
  for (const char* dt : {"_f32.", "_f64."}) {
    const std::string c1 = std::string("rms") + dt;
    nn::RMSNorm rms(5, {.eps = 1e-6, .dtype = G(c1 + "w").dtype()});
    rms.weight().set_value(G(c1 + "w"));
    check_norm(rms, c1);

    const std::string c2 = std::string("rms_2d") + dt;
    nn::RMSNorm rms2({3, 4}, {.dtype = G(c2 + "w").dtype()});  // eps: the dtype's epsilon
    rms2.weight().set_value(G(c2 + "w"));
    check_norm(rms2, c2);
  }
}
