// Losses on Var. mse_loss is a composite; cross_entropy is one fused node (log_softmax + pick).
#include "autodiff/ops/loss.h"

#include "autodiff/node.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/sum_to.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

Var mse_loss(const Var& pred, const Var& target, Reduction reduction) {
  Var diff = sub(pred, target);
  Var squares = mul(diff, diff);
  return reduction == Reduction::Mean ? mean(squares) : sum(squares);
}

Var cross_entropy(const Var& logits, const Tensor& targets, Reduction reduction) {
  RUCCL_CHECK(logits.dim() == 1 || logits.dim() == 2, ShapeError,
              "cross_entropy: expected logits of shape [N, C] or [C], got ", logits.shape());
  RUCCL_CHECK(is_floating(logits.dtype()), DTypeError,
              "cross_entropy: expected floating logits, got ", logits.dtype());
  RUCCL_CHECK(targets.defined() && is_integral(targets.dtype()), DTypeError,
              "cross_entropy: expected integer (I64/I32) class indices as targets, got ",
              targets.defined() ? str(targets.dtype()) : std::string("an undefined tensor"));
  const bool batched = logits.dim() == 2;
  const std::int64_t rows = batched ? logits.shape()[0] : 1;
  const std::int64_t classes = logits.shape()[logits.dim() - 1];
  RUCCL_CHECK(batched ? (targets.dim() == 1 && targets.shape()[0] == rows) : targets.numel() == 1,
              ShapeError, "cross_entropy: expected targets of shape [", rows, "] for logits ",
              logits.shape(), ", got ", targets.shape());
  Tensor x2 = batched ? logits.value() : logits.value().reshape(Shape{1, classes});
  Tensor index = reshape_grad(targets, Shape{rows, 1});
  Tensor lsm = ruccl::log_softmax(x2, 1);
  Tensor picked;
  try {
    picked = ruccl::gather(lsm, 1, index);
  } catch (const IndexError& e) {
    throw IndexError(str("cross_entropy: expected targets in [0, ", classes, "); ", e.what()));
  }
  Tensor loss = ruccl::neg(ruccl::sum(picked));
  const bool mean = reduction == Reduction::Mean;
  if (mean) loss = ruccl::div(loss, static_cast<double>(rows));
  if (!should_record({logits})) return Var(std::move(loss));
  // d loss / d logits = (softmax - one_hot(targets)) * g, / N for Mean.
  return make_var(std::move(loss), "cross_entropy", {logits},
                  [lsm, index, mean, rows](const Tensor& g, GradInputs& grads) {
                    Tensor minus_one = Tensor::full(index.shape(), -1.0, lsm.dtype(), lsm.device());
                    Tensor d = ruccl::scatter_add(ruccl::exp(lsm), 1, index, minus_one);
                    Tensor scale = mean ? ruccl::div(g, static_cast<double>(rows)) : g;
                    grads[0] = reshape_grad(ruccl::mul(d, scale), grads.input_shape(0));
                  });
}

}  // namespace ruccl::autodiff
