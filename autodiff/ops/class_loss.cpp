// cross_entropy and nll_loss over class indices: one fused node each, sharing the bookkeeping of
// weights, ignore_index and the Mean denominators (PyTorch 1.13's rules, see loss.h).
#include <utility>

#include "autodiff/node.h"
#include "autodiff/ops/loss.h"
#include "autodiff/ops/sum_to.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

namespace {

// The input as rows [M, C] (class dim last) and the targets as [M] I64, with the way back.
struct Rows {
  Tensor x;        // [M, C]
  Tensor targets;  // [M], I64
  std::int64_t classes = 0;
  Shape moved_shape;  // [N, d1, ..., C] before the reshape to rows (rank >= 3 only)
};

Rows to_rows(const char* op, const Var& input, const Tensor& targets) {
  RUCCL_CHECK(is_floating(input.dtype()), DTypeError, op, ": expected a floating input, got ",
              input.dtype());
  RUCCL_CHECK(targets.defined() && is_integral(targets.dtype()) && targets.dtype() != DType::Bool,
              DTypeError, op, ": expected integer (I64/I32) class indices as targets, got ",
              targets.defined() ? str(targets.dtype()) : std::string("an undefined tensor"));
  RUCCL_CHECK(input.dim() >= 1, ShapeError, op,
              ": expected an input of shape [N, C], [C] or [N, C, d1, ...], got ", input.shape());
  Rows r;
  const Shape& s = input.shape();
  if (input.dim() == 1) {
    r.classes = s[0];
    RUCCL_CHECK(targets.numel() == 1 && targets.dim() <= 1, ShapeError, op,
                ": expected a 0-d target for an input of shape ", s, ", got ", targets.shape());
    r.x = input.value().reshape(Shape{1, r.classes});
  } else {
    r.classes = s[1];
    Shape want{s[0]};
    for (std::int64_t d = 2; d < input.dim(); ++d) want.push_back(s[d]);
    RUCCL_CHECK(targets.shape() == want, ShapeError, op, ": expected targets of shape ", want,
                " for an input of shape ", s, ", got ", targets.shape());
    if (input.dim() == 2) {
      r.x = input.value();
    } else {
      std::vector<std::int64_t> perm{0};
      for (std::int64_t d = 2; d < input.dim(); ++d) perm.push_back(d);
      perm.push_back(1);
      Tensor moved = input.value().permute(perm);
      r.moved_shape = moved.shape();
      r.x = moved.reshape(Shape{-1, r.classes});
    }
  }
  r.targets = targets.to(DType::I64).to(input.value().device()).reshape(Shape{-1});
  return r;
}

// A [M, C] gradient back to the input's shape.
Tensor from_rows(const Tensor& grad, const Shape& moved_shape, const Shape& input_shape) {
  if (moved_shape.empty()) return reshape_grad(grad, input_shape);
  const std::int64_t rank = static_cast<std::int64_t>(input_shape.size());
  std::vector<std::int64_t> back{0, rank - 1};
  for (std::int64_t d = 1; d + 1 < rank; ++d) back.push_back(d);
  return grad.reshape(moved_shape).permute(back).contiguous();
}

// Per-row weights and the Mean denominators.
struct Terms {
  Tensor index;   // [M, 1] I64: the target, 0 where ignored
  Tensor valid;   // [M] of the input's dtype: 1, or 0 where ignored
  Tensor w_rows;  // [M]: weight[target] (1 without weight), 0 where ignored
  Tensor weight;  // [C] (ones without a weight)
  Tensor denom;   // 0-d: what Mean divides both terms by (1 for Sum)
};

Terms make_terms(const char* op, const Rows& r, const ClassLossOptions& o, DType dtype) {
  const Device device = r.x.device();
  Terms t;
  Tensor valid = ruccl::ne(r.targets, o.ignore_index);
  Tensor safe = ruccl::where(valid, r.targets, Tensor::scalar(0, DType::I64, device));
  if (safe.numel() > 0) {
    const std::int64_t lo = ruccl::min(safe).item<std::int64_t>();
    const std::int64_t hi = ruccl::max(safe).item<std::int64_t>();
    RUCCL_CHECK(lo >= 0 && hi < r.classes, IndexError, op, ": expected targets in [0, ", r.classes,
                ") or equal to ignore_index ", o.ignore_index, ", got ", lo < 0 ? lo : hi);
  }
  if (o.weight.defined()) {
    RUCCL_CHECK(o.weight.dtype() == dtype, DTypeError, op,
                ": expected a weight of the input's dtype ", dtype, ", got ", o.weight.dtype());
    RUCCL_CHECK(o.weight.dim() == 1 && o.weight.shape()[0] == r.classes, ShapeError, op,
                ": expected a weight of shape [", r.classes, "], got ", o.weight.shape());
    t.weight = o.weight.to(device);
  } else {
    t.weight = Tensor::ones(Shape{r.classes}, dtype, device);
  }
  t.index = safe.unsqueeze(1);
  t.valid = valid.to(dtype);
  t.w_rows = ruccl::mul(ruccl::index_select(t.weight, 0, safe), t.valid);
  const bool mean = o.reduction == Reduction::Mean;
  Tensor one = Tensor::scalar(1.0, dtype, device);
  // Mean: both terms are divided by the summed weights of the samples not ignored (without
  // weights, their number).
  t.denom = mean ? ruccl::sum(t.w_rows) : one;
  return t;
}

// The loss from log-probabilities [M, C].
Tensor loss_value(const Tensor& lsm, const Terms& t, double eps, std::int64_t classes) {
  Tensor picked = ruccl::gather(lsm, 1, t.index).reshape(Shape{-1});
  Tensor loss = ruccl::div(ruccl::neg(ruccl::sum(ruccl::mul(t.w_rows, picked))), t.denom);
  if (eps == 0.0) return loss;
  Tensor smooth_rows = ruccl::matmul(lsm, t.weight);  // Σ_c w[c] lsm[i, c]
  Tensor smooth = ruccl::div(ruccl::neg(ruccl::sum(ruccl::mul(t.valid, smooth_rows))), t.denom);
  return ruccl::add(ruccl::mul(loss, 1.0 - eps), ruccl::mul(smooth, eps / classes));
}

// d loss / d lsm [M, C] for the loss' gradient g (0-d).
Tensor grad_log_probs(const Tensor& g, const Shape& rows_shape, const Terms& t, double eps,
                      std::int64_t classes) {
  Tensor cn = ruccl::div(ruccl::mul(g, 1.0 - eps), t.denom);
  Tensor grad = Tensor::zeros(rows_shape, g.dtype(), g.device());
  if (eps != 0.0) {
    Tensor cs = ruccl::div(ruccl::mul(g, eps / classes), t.denom);
    grad = ruccl::mul(ruccl::mul(ruccl::neg(t.valid), cs).unsqueeze(1), t.weight);
  }
  Tensor picked = ruccl::mul(ruccl::neg(t.w_rows), cn).unsqueeze(1);
  return ruccl::scatter_add(grad, 1, t.index, picked);
}

}  // namespace

Var cross_entropy(const Var& logits, const Tensor& targets, const ClassLossOptions& options) {
  constexpr const char* kOp = "cross_entropy";
  const double eps = options.label_smoothing;
  RUCCL_CHECK(eps >= 0.0 && eps <= 1.0, ValueError, kOp,
              ": expected label_smoothing in [0, 1], got ", eps);
  Rows rows = to_rows(kOp, logits, targets);
  Terms terms = make_terms(kOp, rows, options, logits.dtype());
  Tensor lsm = ruccl::log_softmax(rows.x, 1);
  Tensor loss = loss_value(lsm, terms, eps, rows.classes);
  if (!should_record({logits})) return Var(std::move(loss));
  // d loss / d logits = G − softmax · rowsum(G), G = d loss / d lsm.
  return make_var(std::move(loss), kOp, {logits},
                  [lsm, terms = std::move(terms), moved = rows.moved_shape, classes = rows.classes,
                   eps](const Tensor& g, GradInputs& grads) {
                    Tensor gl = grad_log_probs(g, lsm.shape(), terms, eps, classes);
                    Tensor d = ruccl::sub(gl, ruccl::mul(ruccl::exp(lsm), ruccl::sum(gl, 1, true)));
                    grads[0] = from_rows(d, moved, grads.input_shape(0));
                  });
}

Var cross_entropy(const Var& logits, const Tensor& targets, Reduction reduction) {
  ClassLossOptions options;
  options.reduction = reduction;
  return cross_entropy(logits, targets, options);
}

Var nll_loss(const Var& log_probs, const Tensor& targets, const ClassLossOptions& options) {
  constexpr const char* kOp = "nll_loss";
  RUCCL_CHECK(options.label_smoothing == 0.0, ValueError, kOp,
              ": expected label_smoothing 0 (it belongs to cross_entropy), got ",
              options.label_smoothing);
  Rows rows = to_rows(kOp, log_probs, targets);
  Terms terms = make_terms(kOp, rows, options, log_probs.dtype());
  Tensor loss = loss_value(rows.x, terms, 0.0, rows.classes);
  if (!should_record({log_probs})) return Var(std::move(loss));
  return make_var(std::move(loss), kOp, {log_probs},
                  [terms = std::move(terms), rows_shape = rows.x.shape(), moved = rows.moved_shape,
                   classes = rows.classes](const Tensor& g, GradInputs& grads) {
                    Tensor gl = grad_log_probs(g, rows_shape, terms, 0.0, classes);
                    grads[0] = from_rows(gl, moved, grads.input_shape(0));
                  });
}

}  // namespace ruccl::autodiff
