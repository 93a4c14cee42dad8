#include "autodiff/nn/attention.h"

#include "autodiff/nn/init.h"
#include "autodiff/ops/attention.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/shape.h"
#include "tensor/ops/elementwise.h"

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
  Tensor mask;
  if (attn_mask.defined()) {
    const Shape& ms = attn_mask.shape();
    const bool flat = ms == Shape{t_len, s_len};
    const bool per_head = ms == Shape{b * h, t_len, s_len};
    RUCCL_CHECK(flat || per_head, ShapeError, describe(), ": expected an attn_mask of shape [",
                t_len, ", ", s_len, "] or [", b * h, ", ", t_len, ", ", s_len, "], got ", ms);
    // PyTorch's MultiheadAttention: true = masked out; SDPA: true = attend.
    mask = attn_mask.dtype() == DType::Bool ? ruccl::logical_not(attn_mask) : attn_mask;
    if (!flat) mask = mask.reshape(Shape{b, h, t_len, s_len});
  }
  const double p = is_training() ? options_.dropout : 0.0;
  Var o = autodiff::scaled_dot_product_attention(q, k, v, mask, is_causal, p,
                                                 p > 0.0 ? &generator() : nullptr);
  Var merged = autodiff::reshape(autodiff::transpose(o, 1, 2), Shape{b, t_len, e});
  Var out = out_proj_->forward(merged);
  return options_.batch_first ? out : autodiff::transpose(out, 0, 1);
}

}  // namespace ruccl::nn
