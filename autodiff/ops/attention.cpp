// scaled_dot_product_attention: forward and its backward rule beside it. The [..., T, S] scores
// are made once by a batched matmul and scaled, masked and softmaxed in that same memory through
// the backend's out-parameter forms (the frontend ops would allocate a new tensor each step).
#include "autodiff/ops/attention.h"

#include <cmath>
#include <limits>

#include "autodiff/node.h"
#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

// The leading (batch) dims of a [..., rows, cols] shape.
Shape batch_dims(const Shape& s) {
  Shape b;
  for (std::int64_t d = 0; d + 2 < static_cast<std::int64_t>(s.size()); ++d) b.push_back(s[d]);
  return b;
}

void check_inputs(const Var& q, const Var& k, const Var& v) {
  for (const Var* x : {&q, &k, &v}) {
    RUCCL_CHECK(x->defined(), ValueError, kOp, ": expected defined q, k and v");
  }
  RUCCL_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), ShapeError, kOp,
              ": expected q [..., T, D], k [..., S, D] and v [..., S, Dv] of one rank >= 2, got q ",
              q.shape(), ", k ", k.shape(), ", v ", v.shape());
  RUCCL_CHECK(is_floating(q.dtype()), DTypeError, kOp, ": expected a floating q, got ", q.dtype());
  RUCCL_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), DTypeError, kOp,
              ": expected k and v of q's dtype ", q.dtype(), ", got k ", k.dtype(), ", v ",
              v.dtype());
  RUCCL_CHECK(k.value().device() == q.value().device() && v.value().device() == q.value().device(),
              DeviceError, kOp, ": expected k and v on q's device ", q.value().device(), ", got k ",
              k.value().device(), ", v ", v.value().device());
  const std::int64_t r = q.dim();
  RUCCL_CHECK(batch_dims(k.shape()) == batch_dims(q.shape()) &&
                  batch_dims(v.shape()) == batch_dims(q.shape()),
              ShapeError, kOp, ": expected k and v with q's leading dims ", batch_dims(q.shape()),
              ", got k ", k.shape(), ", v ", v.shape());
  RUCCL_CHECK(k.shape()[r - 1] == q.shape()[r - 1], ShapeError, kOp,
              ": expected k's last dim to be q's head dim ", q.shape()[r - 1], ", got k ",
              k.shape());
  RUCCL_CHECK(v.shape()[r - 2] == k.shape()[r - 2], ShapeError, kOp,
              ": expected v with k's sequence length ", k.shape()[r - 2], ", got v ", v.shape());
}

// The mask as a view of the scores' shape, on their device.
Tensor expand_mask(const Tensor& mask, const Tensor& scores) {
  RUCCL_CHECK(mask.dtype() == DType::Bool || mask.dtype() == scores.dtype(), DTypeError, kOp,
              ": expected a Bool attn_mask or one of q's dtype ", scores.dtype(), ", got ",
              mask.dtype());
  const Shape& s = scores.shape();
  bool fits = mask.dim() <= scores.dim();
  for (std::int64_t i = 1; fits && i <= mask.dim(); ++i) {
    const std::int64_t m = mask.shape()[mask.dim() - i];
    fits = m == 1 || m == s[s.size() - i];
  }
  RUCCL_CHECK(fits, ShapeError, kOp, ": expected an attn_mask broadcastable to the scores' shape ",
              s, ", got ", mask.shape());
  return mask.to(scores.device()).expand(s);
}

// Writes -inf into `scores` (in place) where `keep` (a Bool view of scores' shape) is false.
void mask_out(Backend& backend, const Tensor& keep, Tensor& scores) {
  Tensor neg_inf =
      Tensor::scalar(-std::numeric_limits<double>::infinity(), scores.dtype(), scores.device())
          .expand(scores.shape());
  backend.where(keep, scores, neg_inf, scores);
}

}  // namespace

Var scaled_dot_product_attention(const Var& q, const Var& k, const Var& v, const Tensor& attn_mask,
                                 bool is_causal, double dropout_p, Generator* generator) {
  check_inputs(q, k, v);
  RUCCL_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, ValueError, kOp,
              ": expected 0 <= dropout_p < 1, got ", dropout_p);
  RUCCL_CHECK(!(is_causal && attn_mask.defined()), ValueError, kOp,
              ": expected either attn_mask or is_causal, got both (as PyTorch)");
  const std::int64_t r = q.dim();
  const std::int64_t t_len = q.shape()[r - 2];
  const std::int64_t s_len = k.shape()[r - 2];
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.shape()[r - 1]));
  const Device device = q.value().device();
  Backend& backend = backend_for(device);

  // P = softmax(q kᵀ * scale + mask), built in one tensor.
  Tensor p = ruccl::matmul(q.value(), mT(k.value()));
  p.mul_(scale);
  if (attn_mask.defined()) {
    Tensor m = expand_mask(attn_mask, p);
    if (m.dtype() == DType::Bool) {
      mask_out(backend, m, p);
    } else {
      backend.binary(Op::Add, p, m, p);
    }
  }
  if (is_causal) {
    Tensor rows = Tensor::arange(0, t_len, 1, DType::I64, device).unsqueeze(1);
    Tensor cols = Tensor::arange(0, s_len, 1, DType::I64, device).unsqueeze(0);
    mask_out(backend, ruccl::ge(rows, cols).expand(p.shape()), p);
  }
  backend.softmax(Op::Softmax, p, p.dim() - 1, p);

  // Dropout on P: keep where u >= dropout_p, scaled by 1 / (1 - dropout_p).
  Tensor keep;
  Tensor zero = Tensor::scalar(0.0, p.dtype(), device);
  const double keep_scale = 1.0 / (1.0 - dropout_p);
  auto dropped = [zero, keep_scale](const Tensor& keep_mask, const Tensor& x) {
    return ruccl::where(keep_mask, ruccl::mul(x, keep_scale), zero);
  };
  Tensor out;
  if (dropout_p > 0.0) {
    Tensor u = generator != nullptr ? Tensor::rand(p.shape(), *generator, p.dtype(), device)
                                    : with_default_generator([&](Generator& g) {
                                        return Tensor::rand(p.shape(), g, p.dtype(), device);
                                      });
    keep = ruccl::ge(u, dropout_p);
    out = ruccl::matmul(dropped(keep, p), v.value());
  } else {
    out = ruccl::matmul(p, v.value());
  }
  if (!should_record({q, k, v})) return Var(std::move(out));
  return make_var(out, kOp, {q, k, v},
                  [qv = q.value(), kv = k.value(), vv = v.value(), p, keep, out, scale, dropped](
                      const Tensor& g, GradInputs& grads) {
                    const bool dropout = keep.defined();
                    Backend& be = backend_for(g.device());
                    if (grads.needed(2))
                      grads[2] = ruccl::matmul(mT(dropout ? dropped(keep, p) : p), g);
                    if (!grads.needed(0) && !grads.needed(1)) return;
                    // dS = P ∘ (dP − rowsum(dO ∘ O)), in dP's memory, then times the scale.
                    Tensor ds = ruccl::matmul(g, mT(vv));
                    if (dropout) ds = dropped(keep, ds);
                    Tensor row = ruccl::sum(ruccl::mul(g, out), -1, true).expand(ds.shape());
                    be.binary(Op::Sub, ds, row, ds);
                    be.binary(Op::Mul, ds, p, ds);
                    ds.mul_(scale);
                    if (grads.needed(0)) grads[0] = ruccl::matmul(ds, kv);
                    if (grads.needed(1)) grads[1] = ruccl::matmul(mT(ds), qv);
                  });
}

}  // namespace ruccl::autodiff
