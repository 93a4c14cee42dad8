#pragma once
#include <cstdint>

#include "autodiff/nn/linear.h"
#include "autodiff/nn/module.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Options of MultiheadAttention (every member has a default).
struct MultiheadAttentionOptions {
  /// Whether the input and output projections learn biases.
  bool bias = true;
  /// Dropout probability on the attention weights (training mode only).
  double dropout = 0.0;
  /// Inputs [B, T, E] when true, [T, B, E] (PyTorch's default) when false.
  bool batch_first = false;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// The masks and outputs of one MultiheadAttention::attend call, torch.nn.MultiheadAttention's
/// forward arguments by name. Bool masks mark the positions NOT allowed to attend (true = masked
/// out, as PyTorch's MultiheadAttention); floating masks are added to the scores.
struct MultiheadAttentionArgs {
  /// [T, S] or [B·H, T, S] (Bool or floating).
  Tensor attn_mask{};
  /// [B, S] (Bool: true = a padding key; or floating): masks keys per batch item.
  Tensor key_padding_mask{};
  /// Mask keys after each query (j > i); ValueError together with attn_mask.
  bool is_causal = false;
  /// Also return the attention weights (softmax of the masked scores, after dropout, as PyTorch).
  bool need_weights = false;
  /// Weights averaged over the heads ([B, T, S]) or per head ([B, H, T, S]).
  bool average_attn_weights = true;
};

/// What MultiheadAttention::attend returns: the output, and the weights when asked for.
struct AttentionOutput {
  Var output{};   ///< [T, B, E] or [B, T, E] (batch_first), as the query
  Var weights{};  ///< [B, T, S] or [B, H, T, S]; undefined unless need_weights
};

/// Multi-head attention with torch.nn.MultiheadAttention's parameters, so state copies across:
/// "in_proj_weight" [3E, E] (rows: the q, k, v projections), "in_proj_bias" [3E], and the
/// sub-module "out_proj" (Linear(E, E): "out_proj.weight", "out_proj.bias"). Initialised like
/// PyTorch: out_proj as a Linear, then xavier_uniform on in_proj_weight; biases zero. Draws from
/// `gen`, or without one from the default generator.
///
///   nn::MultiheadAttention mha(64, 4, {.batch_first = true});
///   Var y = mha.forward(x, x, x, {}, /*is_causal=*/true);   // [B, T, 64] -> [B, T, 64]
///
/// Each head is scaled_dot_product_attention on E / H features. forward returns the attended
/// output only (PyTorch's need_weights=False); attend() takes a key_padding_mask and returns the
/// attention weights too (need_weights: then the heads are the composition softmax(q kᵀ /
/// sqrt(D) + mask) v, which keeps the [B, H, T, S] weights on the tape). The dropout draws come
/// from the module's own "generator" (saved by TrainingRecord, as Dropout's).
class MultiheadAttention : public Cloneable<MultiheadAttention> {
 public:
  /// ValueError unless embed_dim divides by num_heads (both positive) and 0 <= dropout < 1.
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads,
                     MultiheadAttentionOptions options = {});
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, Generator& gen,
                     MultiheadAttentionOptions options = {});

  /// Self-attention without a mask: forward(x, x, x).
  Var forward(const Var& x) override;
  /// query [T, B, E] (or [B, T, E] with batch_first), key and value [S, B, E] (or [B, S, E]).
  /// `attn_mask` as PyTorch's MultiheadAttention: [T, S] or [B·H, T, S]; a Bool mask marks the
  /// positions NOT allowed to attend (true = masked out), a floating one is added to the scores.
  /// `is_causal` masks keys after each query (j > i) and excludes attn_mask.
  Var forward(const Var& query, const Var& key, const Var& value, const Tensor& attn_mask = {},
              bool is_causal = false);
  /// forward() with every argument of torch.nn.MultiheadAttention.forward:
  ///
  ///   auto [y, w] = mha.attend(x, x, x, {.key_padding_mask = padded, .need_weights = true});
  AttentionOutput attend(const Var& query, const Var& key, const Var& value,
                         const MultiheadAttentionArgs& args);

  std::int64_t embed_dim() const { return embed_dim_; }
  std::int64_t num_heads() const { return num_heads_; }
  Param& in_proj_weight() { return param_at(in_weight_); }
  /// The input projections' bias; ValueError when built without biases.
  Param& in_proj_bias();
  ModuleHandle<Linear>& out_proj() { return out_proj_; }
  Generator& generator() { return generator_at(gen_); }

 private:
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, Generator* gen,
                     MultiheadAttentionOptions options);
  // The one additive or Bool (true = attend) mask of a call for [B, H, T, S] scores.
  Tensor call_mask(const MultiheadAttentionArgs& args, std::int64_t b, std::int64_t t_len,
                   std::int64_t s_len, bool merge) const;
  std::int64_t embed_dim_;
  std::int64_t num_heads_;
  MultiheadAttentionOptions options_;
  std::size_t in_weight_ = 0;
  std::size_t in_bias_ = 0;
  std::size_t gen_ = 0;
  ModuleHandle<Linear> out_proj_;
};

}  // namespace ruccl::nn
