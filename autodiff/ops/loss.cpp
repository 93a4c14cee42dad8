// Losses on Var: mse_loss is a composite; binary_cross_entropy_with_logits is one fused node.
// cross_entropy and nll_loss live in class_loss.cpp.
#include "autodiff/ops/loss.h"

#include "autodiff/node.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/reduce.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

Var mse_loss(const Var& pred, const Var& target, Reduction reduction) {
  Var diff = sub(pred, target);
  Var squares = mul(diff, diff);
  return reduction == Reduction::Mean ? mean(squares) : sum(squares);
}

namespace {

// A weight tensor checked (dtype, broadcastable to `shape`) and placed on `device`.
Tensor checked_weight(const char* what, const Tensor& w, const Shape& shape, DType dtype,
                      Device device) {
  constexpr const char* kOp = "binary_cross_entropy_with_logits";
  RUCCL_CHECK(w.dtype() == dtype, DTypeError, kOp, ": expected ", what, " of the input's dtype ",
              dtype, ", got ", w.dtype());
  bool fits = w.dim() <= static_cast<std::int64_t>(shape.size());
  for (std::int64_t i = 1; fits && i <= w.dim(); ++i) {
    const std::int64_t m = w.shape()[w.dim() - i];
    fits = m == 1 || m == shape[shape.size() - i];
  }
  RUCCL_CHECK(fits, ShapeError, kOp, ": expected ", what, " broadcastable to the input's shape ",
              shape, ", got ", w.shape());
  return w.to(device);
}

}  // namespace

Var binary_cross_entropy_with_logits(const Var& input, const Tensor& target,
                                     const BceOptions& options) {
  constexpr const char* kOp = "binary_cross_entropy_with_logits";
  RUCCL_CHECK(is_floating(input.dtype()), DTypeError, kOp, ": expected a floating input, got ",
              input.dtype());
  RUCCL_CHECK(target.defined() && target.dtype() == input.dtype(), DTypeError, kOp,
              ": expected a target of the input's dtype ", input.dtype(), ", got ",
              target.defined() ? str(target.dtype()) : std::string("an undefined tensor"));
  RUCCL_CHECK(target.shape() == input.shape(), ShapeError, kOp,
              ": expected a target of the input's shape ", input.shape(), ", got ", target.shape());
  const Tensor& x = input.value();
  const Device device = x.device();
  const Tensor y = target.to(device);
  Tensor w = options.weight.defined()
                 ? checked_weight("a weight", options.weight, x.shape(), x.dtype(), device)
                 : Tensor();
  // lw = 1 + (pos_weight − 1) y multiplies the positive term softplus(−x).
  Tensor lw =
      options.pos_weight.defined()
          ? ruccl::add(ruccl::mul(ruccl::sub(checked_weight("a pos_weight", options.pos_weight,
                                                            x.shape(), x.dtype(), device),
                                             1.0),
                                  y),
                       1.0)
          : Tensor();
  // softplus(−x) = log(1 + e^−|x|) + max(−x, 0), finite for every x.
  Tensor softplus_neg =
      ruccl::add(ruccl::log(ruccl::add(ruccl::exp(ruccl::neg(ruccl::abs(x))), 1.0)),
                 ruccl::relu(ruccl::neg(x)));
  Tensor terms = ruccl::add(ruccl::mul((1.0 - y), x),
                            lw.defined() ? ruccl::mul(lw, softplus_neg) : softplus_neg);
  if (w.defined()) terms = ruccl::mul(terms, w);
  const bool mean = options.reduction == Reduction::Mean;
  Tensor loss = mean ? ruccl::mean(terms) : ruccl::sum(terms);
  if (!should_record({input})) return Var(std::move(loss));
  const double count = static_cast<double>(x.numel());
  return make_var(std::move(loss), kOp, {input},
                  [x, y, w, lw, mean, count](const Tensor& g, GradInputs& grads) {
                    Tensor s = ruccl::sigmoid(ruccl::neg(x));
                    Tensor d = ruccl::sub((1.0 - y), lw.defined() ? ruccl::mul(lw, s) : s);
                    if (w.defined()) d = ruccl::mul(d, w);
                    grads[0] = ruccl::mul(d, mean ? ruccl::div(g, count) : g);
                  });
}

}  // namespace ruccl::autodiff
