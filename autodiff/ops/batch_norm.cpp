// batch_norm on Var (autodiff/ops/batch_norm.h): the forward and its backward rule.
#include "autodiff/ops/batch_norm.h"

#include <vector>

#include "autodiff/node.h"
#include "tensor/ops/batch_norm.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff {

namespace {

/// ShapeError / DTypeError / DeviceError unless `t` (undefined allowed) is a [C] tensor of x's
/// dtype and device; `what` names it.
void check_per_channel(const Tensor& t, const Tensor& x, const char* what) {
  if (!t.defined()) return;
  const Shape channels{x.shape()[1]};
  RUCCL_CHECK(t.shape() == channels, ShapeError, "batch_norm: expected ", what, " of shape ",
              channels, ", got ", t.shape());
  RUCCL_CHECK(t.dtype() == x.dtype(), DTypeError, "batch_norm: expected ", what, " of dtype ",
              x.dtype(), " (the input's), got ", t.dtype());
  RUCCL_CHECK(t.device() == x.device(), DeviceError, "batch_norm: expected ", what, " on device ",
              x.device(), " (the input's), got ", t.device());
}

void check_args(const Var& x, const Tensor& running_mean, const Tensor& running_var,
                const Var& weight, const Var& bias, bool training) {
  RUCCL_CHECK(x.defined(), ValueError,
              "batch_norm: expected a defined input, got an undefined one");
  RUCCL_CHECK(x.dim() >= 2, ShapeError, "batch_norm: expected an input [N, C, ...], got ",
              x.shape());
  RUCCL_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F64, DTypeError,
              "batch_norm: expected an F32 or F64 input, got ", x.dtype());
  RUCCL_CHECK(running_mean.defined() == running_var.defined(), ValueError,
              "batch_norm: expected running_mean and running_var both given or both undefined, "
              "got only ",
              running_mean.defined() ? "running_mean" : "running_var");
  RUCCL_CHECK(training || running_mean.defined(), ValueError,
              "batch_norm: expected running statistics in evaluation mode (training false), got "
              "none");
  check_per_channel(running_mean, x.value(), "running_mean");
  check_per_channel(running_var, x.value(), "running_var");
  check_per_channel(weight.defined() ? weight.value() : Tensor(), x.value(), "weight");
  check_per_channel(bias.defined() ? bias.value() : Tensor(), x.value(), "bias");
}

}  // namespace

Var batch_norm(const Var& x, const Tensor& running_mean, const Tensor& running_var,
               const Var& weight, const Var& bias, bool training, double momentum, double eps) {
  check_args(x, running_mean, running_var, weight, bias, training);
  const Tensor xv = x.value().contiguous();
  const std::int64_t count = xv.numel() / xv.shape()[1];
  Tensor mean;
  Tensor invstd;
  if (training) {
    RUCCL_CHECK(!running_mean.defined() || count > 1, ValueError,
                "batch_norm: expected more than 1 value per channel to update the running "
                "statistics, got ",
                count, " (input ", xv.shape(), ")");
    BatchNormStats stats = batch_norm_stats(xv);
    invstd = rsqrt(add(stats.var, eps));
    if (running_mean.defined()) {
      const auto n = static_cast<double>(count);
      const Tensor unbiased = mul(stats.var, n / (n - 1.0));
      running_mean.copy_(add(mul(running_mean, 1.0 - momentum), mul(stats.mean, momentum)));
      running_var.copy_(add(mul(running_var, 1.0 - momentum), mul(unbiased, momentum)));
    }
    mean = std::move(stats.mean);
  } else {
    mean = running_mean.clone();  // the buffer changes in place by later training steps
    invstd = rsqrt(add(running_var, eps));
  }
  const Tensor scale = weight.defined() ? mul(weight.value(), invstd) : invstd;
  const Tensor shift = bias.defined() ? sub(bias.value(), mul(mean, scale)) : neg(mul(mean, scale));
  Tensor out = batch_norm_elemt(xv, scale, shift);

  std::vector<Var> inputs{x};
  const std::size_t weight_slot = weight.defined() ? inputs.size() : 0;
  if (weight.defined()) inputs.push_back(weight);
  const std::size_t bias_slot = bias.defined() ? inputs.size() : 0;
  if (bias.defined()) inputs.push_back(bias);
  auto rule = [xv, mean, invstd, scale, training, count, weight_slot, bias_slot](
                  const Tensor& g, GradInputs& grads) {
    const bool want_weight = weight_slot > 0 && grads.needed(weight_slot);
    const bool want_bias = bias_slot > 0 && grads.needed(bias_slot);
    if (!training && !want_weight && !want_bias) {
      if (grads.needed(0))
        grads[0] =
            batch_norm_elemt(g, scale, Tensor::zeros(scale.shape(), scale.dtype(), scale.device()));
      return;
    }
    const BatchNormGradSums sums = batch_norm_backward_reduce(g, xv, mean);
    if (want_weight) grads[weight_slot] = mul(sums.sum_dy_xmu, invstd);
    if (want_bias) grads[bias_slot] = sums.sum_dy;
    if (!grads.needed(0)) return;
    if (!training) {
      grads[0] =
          batch_norm_elemt(g, scale, Tensor::zeros(scale.shape(), scale.dtype(), scale.device()));
      return;
    }
    const auto n = static_cast<double>(count);
    const Tensor mean_dy = div(sums.sum_dy, n);
    const Tensor proj = mul(div(sums.sum_dy_xmu, n), mul(invstd, invstd));
    grads[0] = batch_norm_backward_elemt(g, xv, mean, mean_dy, proj, scale);
  };
  return make_var_list(std::move(out), "batch_norm", inputs, std::move(rule));
}

}  // namespace ruccl::autodiff
