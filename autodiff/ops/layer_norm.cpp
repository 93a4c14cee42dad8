// layer_norm on Var (autodiff/ops/layer_norm.h): the forward and its backward rule.
#include "autodiff/ops/layer_norm.h"

#include "autodiff/node.h"
#include "tensor/ops/batch_norm.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

namespace {

void check_args(const Var& x, const std::vector<std::int64_t>& normalized_shape, const Var& weight,
                const Var& bias) {
  RUCCL_CHECK(x.defined(), ValueError,
              "layer_norm: expected a defined input, got an undefined one");
  RUCCL_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F64, DTypeError,
              "layer_norm: expected an F32 or F64 input, got ", x.dtype());
  const auto k = static_cast<std::int64_t>(normalized_shape.size());
  bool fits = k > 0 && x.dim() >= k;
  for (std::int64_t i = 0; fits && i < k; ++i) {
    fits = x.shape()[x.dim() - k + i] == normalized_shape[static_cast<std::size_t>(i)];
  }
  RUCCL_CHECK(fits, ShapeError, "layer_norm: expected an input ending in ", Shape(normalized_shape),
              ", got ", x.shape());
  RUCCL_CHECK(x.numel() > 0, ValueError, "layer_norm: expected a non-empty input, got ", x.shape());
  for (const Var* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    const char* what = p == &weight ? "weight" : "bias";
    RUCCL_CHECK(p->shape() == Shape(normalized_shape), ShapeError, "layer_norm: expected ", what,
                " of shape ", Shape(normalized_shape), ", got ", p->shape());
    RUCCL_CHECK(p->dtype() == x.dtype(), DTypeError, "layer_norm: expected ", what, " of dtype ",
                x.dtype(), " (the input's), got ", p->dtype());
    RUCCL_CHECK(p->value().device() == x.value().device(), DeviceError, "layer_norm: expected ",
                what, " on device ", x.value().device(), " (the input's), got ",
                p->value().device());
  }
}

}  // namespace

Var layer_norm(const Var& x, const std::vector<std::int64_t>& normalized_shape, const Var& weight,
               const Var& bias, double eps) {
  check_args(x, normalized_shape, weight, bias);
  const Shape shape = x.shape();
  const std::int64_t e = Shape(normalized_shape).numel();
  const std::int64_t r = x.numel() / e;
  const Tensor rows = x.value().contiguous().reshape({1, r, e});  // each row a "channel"
  const BatchNormStats stats = batch_norm_stats(rows);
  const Tensor invstd = rsqrt(add(stats.var, eps));
  const Tensor xhat = batch_norm_elemt(rows, invstd, neg(mul(stats.mean, invstd))).reshape({r, e});
  const DType dtype = x.dtype();
  const Device device = x.value().device();
  const Tensor w = weight.defined() ? weight.value().contiguous().reshape({e})
                                    : Tensor::ones(Shape{e}, dtype, device);
  const Tensor zeros = Tensor::zeros(Shape{e}, dtype, device);
  Tensor out = weight.defined() || bias.defined()
                   ? batch_norm_elemt(
                         xhat, w, bias.defined() ? bias.value().contiguous().reshape({e}) : zeros)
                   : xhat;
  out = out.reshape(shape);

  std::vector<Var> inputs{x};
  const std::size_t weight_slot = weight.defined() ? inputs.size() : 0;
  if (weight.defined()) inputs.push_back(weight);
  const std::size_t bias_slot = bias.defined() ? inputs.size() : 0;
  if (bias.defined()) inputs.push_back(bias);
  auto rule = [rows, xhat, mean = stats.mean, invstd, w, zeros, r, e, weight_slot, bias_slot,
               affine = weight.defined()](const Tensor& g, GradInputs& grads) {
    const Tensor g2 = g.contiguous().reshape({r, e});
    if (weight_slot > 0 && grads.needed(weight_slot)) {
      grads[weight_slot] = sum(mul(g2, xhat), {0}).reshape(grads.input_shape(weight_slot));
    }
    if (bias_slot > 0 && grads.needed(bias_slot)) {
      grads[bias_slot] = sum(g2, {0}).reshape(grads.input_shape(bias_slot));
    }
    if (!grads.needed(0)) return;
    const Tensor gxhat = (affine ? batch_norm_elemt(g2, w, zeros) : g2).reshape({1, r, e});
    const BatchNormGradSums sums = batch_norm_backward_reduce(gxhat, rows, mean);
    const auto n = static_cast<double>(e);
    const Tensor proj = mul(div(sums.sum_dy_xmu, n), mul(invstd, invstd));
    grads[0] = batch_norm_backward_elemt(gxhat, rows, mean, div(sums.sum_dy, n), proj, invstd)
                   .reshape(grads.input_shape(0));
  };
  return make_var_list(std::move(out), "layer_norm", inputs, std::move(rule));
}

}  // namespace ruccl::autodiff
