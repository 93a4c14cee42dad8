// cross_entropy, nll_loss and binary_cross_entropy_with_logits against PyTorch 1.13 in F64 and
// F32, with each option (tools/golden/attention_loss_golden.py, data in
// tests/data/attention_loss_golden.txt): the loss and its gradient. Tolerances: F64 absorbs
// summation order only; F32 the rounding of log_softmax and of a sum over a few dozen terms.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/golden_tensors.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorNear;

namespace {

Tensor G(const std::string& name) {
  return ruccl::testing::golden_tensor("attention_loss_golden.txt", name);
}
bool has(const std::string& name) {
  return ruccl::testing::golden_tensors("attention_loss_golden.txt").count(name) > 0;
}

Tensor optional(const std::string& name) { return has(name) ? G(name) : Tensor(); }

const char* kSuffixes[] = {"f64", "f32"};

void check(const std::string& c, const std::function<Var(const Var&)>& loss_of) {
  INFO(c);
  const bool f64 = c.substr(c.size() - 3) == "f64";
  const double rtol = f64 ? 1e-9 : 1e-5;
  const double atol = f64 ? 1e-12 : 1e-6;
  Var x(G(c + ".x"), true);
  Var loss = loss_of(x);
  loss.backward();
  CHECK_THAT(loss.value(), TensorNear(G(c + ".loss"), rtol, atol));
  CHECK_THAT(x.grad(), TensorNear(G(c + ".grad"), rtol, atol));
}

void check_class(const std::string& name, bool nll, ClassLossOptions options) {
  for (const char* suffix : kSuffixes) {
    const std::string c = name + "_" + suffix;
    options.weight = optional(c + ".w");
    check(c, [&](const Var& x) {
      return nll ? nll_loss(x, G(c + ".t"), options) : cross_entropy(x, G(c + ".t"), options);
    });
  }
}

void check_bce(const std::string& name, Reduction reduction) {
  for (const char* suffix : kSuffixes) {
    const std::string c = name + "_" + suffix;
    BceOptions options{reduction, optional(c + ".w"), optional(c + ".pw")};
    check(c,
          [&](const Var& x) { return binary_cross_entropy_with_logits(x, G(c + ".y"), options); });
  }
}

constexpr Reduction kMean = Reduction::Mean;
constexpr Reduction kSum = Reduction::Sum;

}  // namespace

TEST_CASE("cross_entropy matches PyTorch: mean, sum and one unbatched sample", "[autodiff]") {
  check_class("ce_mean", false, {});
  check_class("ce_sum", false, {.reduction = kSum});
  check_class("ce_one", false, {});
  // The original signature gives the same values.
  check("ce_sum_f64", [](const Var& x) { return cross_entropy(x, G("ce_sum_f64.t"), kSum); });
}

TEST_CASE("cross_entropy matches PyTorch with class weights (Mean divides by their sum)",
          "[autodiff]") {
  check_class("ce_weight", false, {});
}

TEST_CASE("cross_entropy matches PyTorch with ignore_index", "[autodiff]") {
  check_class("ce_ignore", false, {});
}

TEST_CASE("cross_entropy matches PyTorch with label_smoothing, alone and with ignore_index",
          "[autodiff]") {
  check_class("ce_smooth", false, {.label_smoothing = 0.2});
  check_class("ce_smooth_ignore", false, {.label_smoothing = 0.3});
}

TEST_CASE("cross_entropy matches PyTorch with weight, ignore_index and smoothing together",
          "[autodiff]") {
  check_class("ce_all_mean", false, {.label_smoothing = 0.15});
  check_class("ce_all_sum", false, {.reduction = kSum, .label_smoothing = 0.15});
}

TEST_CASE("cross_entropy matches PyTorch on [N, C, d1, d2] with every option", "[autodiff]") {
  check_class("ce_nd", false, {.label_smoothing = 0.1});
}

TEST_CASE("nll_loss matches PyTorch: mean, weighted with ignore_index, summed on [N, C, d]",
          "[autodiff]") {
  check_class("nll_mean", true, {});
  check_class("nll_weight_ignore", true, {});
  check_class("nll_sum_nd", true, {.reduction = kSum});
}

TEST_CASE(
    "binary_cross_entropy_with_logits matches PyTorch, finite at |x| = 40 and with the "
    "kink at 0, with weight and pos_weight",
    "[autodiff]") {
  check_bce("bce_mean", kMean);
  check_bce("bce_weight", kMean);
  check_bce("bce_pos_weight", kSum);
  check_bce("bce_both", kMean);
}
