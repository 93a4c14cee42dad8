#include "autodiff/nn/attention.h"

#include <cmath>
#include <limits>

#include "autodiff/nn/init.h"
#include "autodiff/ops/attention.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/shape.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/masking.h"

namespace ruccl::nn {

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       MultiheadAttentionOptions options)
    : MultiheadAttention(embed_dim, num_heads, nullptr, options) {}

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       Generator& gen, MultiheadAttentionOptions options)
    : MultiheadAttention(embed_dim, num_heads, &gen, options) {}

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                                       Generator* gen, MultiheadAttentionOptions options)
    : embed_dim_(embed_dim), num_heads_(num_heads), options_(options) {
  RUCCL_CHECK(embed_dim > 0 && num_heads > 0, ValueError,
              "MultiheadAttention: expected positive embed_dim and num_heads, got ", embed_dim,
              " and ", num_heads);
  RUCCL_CHECK(embed_dim % num_heads == 0, ValueError,
              "MultiheadAttention: expected embed_dim divisible by num_heads, got embed_dim ",
              embed_dim, " and num_heads ", num_heads);
  RUCCL_CHECK(options.dropout >= 0.0 && options.dropout < 1.0, ValueError,
              "MultiheadAttention: expected 0 <= dropout < 1, got ", options.dropout);
  RUCCL_CHECK(is_floating(options.dtype), DTypeError,
              "MultiheadAttention: expected a floating dtype, got ", options.dtype);
  const LinearOptions lin{.bias = options.bias, .dtype = options.dtype};
  // PyTorch's order: out_proj is built (drawn) first, then in_proj_weight gets xavier_uniform.
  Linear out =
      gen != nullptr ? Linear(embed_dim, embed_dim, *gen, lin) : Linear(embed_dim, embed_dim, lin);
  Param w(Tensor::zeros({3 * embed_dim, embed_dim}, options.dtype));
  std::uint64_t seed = 0;
  auto draw = [&](Generator& g) {
    init::xavier_uniform_(w, g);
    seed = g.next_u64();  // the dropout generator's seed, as Dropout draws it
  };
  gen != nullptr ? draw(*gen) : with_default_generator(draw);
  if (options.bias) init::zeros_(out.bias());
  in_weight_ = register_parameter("in_proj_weight", w);
  if (options.bias) {
    in_bias_ =
        register_parameter("in_proj_bias", Param(Tensor::zeros({3 * embed_dim}, options.dtype)));
  }
  out_proj_ = register_module("out_proj", std::move(out));
  gen_ = register_generator("generator", Generator(seed));
}

Param& MultiheadAttention::in_proj_bias() {
  RUCCL_CHECK(options_.bias, ValueError,
              "MultiheadAttention::in_proj_bias: this module was built without biases");
  return param_at(in_bias_);
}

Var MultiheadAttention::forward(const Var& x) { return forward(x, x, x); }

Var MultiheadAttention::forward(const Var& query, const Var& key, const Var& value,
                                const Tensor& attn_mask, bool is_causal) {
  return attend(query, key, value, {.attn_mask = attn_mask, .is_causal = is_causal}).output;
}

namespace {

// A PyTorch-MHA mask as scores to add: Bool true (masked out) -> -inf, floating as it is.
Tensor additive(const Tensor& mask, DType dtype) {
  if (mask.dtype() != DType::Bool) return mask.to(dtype);
  return masked_fill(Tensor::zeros(mask.shape(), dtype, mask.device()), mask,
                     -std::numeric_limits<double>::infinity());
}

}  // namespace

Tensor MultiheadAttention::call_mask(const MultiheadAttentionArgs& args, std::int64_t b,
                                     std::int64_t t_len, std::int64_t s_len, bool merge) const {
  const std::int64_t h = num_heads_;
  const Tensor& weight = param_at(in_weight_).value();
  Tensor am;
  if (args.attn_mask.defined()) {
    const Shape& ms = args.attn_mask.shape();
    const bool flat = ms == Shape{t_len, s_len};
    const bool per_head = ms == Shape{b * h, t_len, s_len};
    RUCCL_CHECK(flat || per_head, ShapeError, describe(), ": expected an attn_mask of shape [",
                t_len, ", ", s_len, "] or [", b * h, ", ", t_len, ", ", s_len, "], got ", ms);
    RUCCL_CHECK(!args.is_causal, ValueError, describe(),
                ": expected attn_mask or is_causal, not both (is_causal is the causal mask)");
    am = flat ? args.attn_mask : args.attn_mask.reshape(Shape{b, h, t_len, s_len});
  }
  if (!merge) {
    // One mask straight to SDPA, whose Bool masks say true = attend.
    if (!am.defined()) return {};
    return am.dtype() == DType::Bool ? ruccl::logical_not(am) : am;
  }
  Tensor total;
  auto add = [&](const Tensor& m) {
    const Tensor a = additive(m, weight.dtype());
    total = total.defined() ? ruccl::add(total, a) : a;
  };
  if (am.defined()) add(am);
  if (const Tensor& kpm = args.key_padding_mask; kpm.defined()) {
    RUCCL_CHECK(kpm.shape() == (Shape{b, s_len}), ShapeError, describe(),
                ": expected a key_padding_mask of shape [", b, ", ", s_len, "], got ", kpm.shape());
    RUCCL_CHECK(kpm.dtype() == DType::Bool || is_floating(kpm.dtype()), DTypeError, describe(),
                ": expected a Bool or floating key_padding_mask, got ", kpm.dtype());
    add(kpm.reshape(Shape{b, 1, 1, s_len}));
  }
  if (args.is_causal) {
    add(ruccl::logical_not(triangle_mask(t_len, s_len, 0, true, weight.device())));
  }
  return total;
}

AttentionOutput MultiheadAttention::attend(const Var& query, const Var& key, const Var& value,
                                           const MultiheadAttentionArgs& args) {
  const std::int64_t e = embed_dim_;
  const DType dtype = in_proj_weight().dtype();
  const char* layout = options_.batch_first ? "[B, T, E]" : "[T, B, E]";
  for (const Var* x : {&query, &key, &value}) {
    RUCCL_CHECK(x->dim() == 3 && x->shape()[2] == e, ShapeError, describe(),
                ": expected query, key and value of shape ", layout, " with E = ", e, ", got ",
                x->shape());
    RUCCL_CHECK(x->dtype() == dtype, DTypeError, describe(), ": expected inputs of dtype ", dtype,
                " (the parameters'), got ", x->dtype());
  }
  const std::int64_t bdim = options_.batch_first ? 0 : 1;
  RUCCL_CHECK(key.shape() == value.shape() && key.shape()[bdim] == query.shape()[bdim], ShapeError,
              describe(), ": expected key and value of one shape with query's batch size ",
              query.shape()[bdim], ", got key ", key.shape(), ", value ", value.shape());
  const std::int64_t b = query.shape()[bdim];
  const std::int64_t h = num_heads_;
  const std::int64_t dh = e / h;
  // [T, B, E] or [B, T, E] -> projected -> [B, H, T, Dh].
  auto heads = [&](const Var& x, std::int64_t part) {
    Var w = autodiff::narrow(in_proj_weight().var(), 0, part * e, e);
    Var bias = options_.bias ? autodiff::narrow(param_at(in_bias_).var(), 0, part * e, e) : Var();
    Var xb = options_.batch_first ? x : autodiff::transpose(x, 0, 1);
    Var y = autodiff::linear(xb, w, bias);
    return autodiff::transpose(autodiff::reshape(y, Shape{b, -1, h, dh}), 1, 2);
  };
  Var q = heads(query, 0);
  Var k = heads(key, 1);
  Var v = heads(value, 2);
  const std::int64_t t_len = q.shape()[2];
  const std::int64_t s_len = k.shape()[2];
  // Several masks (or the weights' composition) take one additive mask; a single one goes to
  // SDPA as it is, which keeps its Bool fast path and is_causal.
  const bool merge = args.key_padding_mask.defined() || args.need_weights;
  const Tensor mask = call_mask(args, b, t_len, s_len, merge);
  const double p = is_training() ? options_.dropout : 0.0;
  AttentionOutput result;
  Var o;
  if (!args.need_weights) {
    o = autodiff::scaled_dot_product_attention(q, k, v, mask, args.is_causal && !merge, p,
                                               p > 0.0 ? &generator() : nullptr);
  } else {
    // PyTorch's composition: softmax(q / sqrt(D) kᵀ + mask), dropout, then times v.
    Var scores = autodiff::matmul(autodiff::mul(q, 1.0 / std::sqrt(static_cast<double>(dh))),
                                  autodiff::transpose(k, 2, 3));
    if (mask.defined()) scores = autodiff::add(scores, Var(mask));
    Var probs = autodiff::softmax(scores, 3);
    if (p > 0.0) {
      const Tensor u = Tensor::rand(probs.shape(), generator(), DType::F64, probs.value().device());
      const Tensor keep = ruccl::ge(u, Tensor::scalar(p, DType::F64, u.device()));
      probs = autodiff::mul(probs, Var(ruccl::div(keep.to(dtype), 1.0 - p)));
    }
    o = autodiff::matmul(probs, v);
    result.weights = args.average_attn_weights
                         ? autodiff::div(autodiff::sum(probs, 1), static_cast<double>(h))
                         : probs;
  }
  Var merged = autodiff::reshape(autodiff::transpose(o, 1, 2), Shape{b, t_len, e});
  Var out = out_proj_->forward(merged);
  result.output = options_.batch_first ? out : autodiff::transpose(out, 0, 1);
  return result;
}

}  // namespace ruccl::nn
