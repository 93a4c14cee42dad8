#pragma once
// Scaled dot-product attention on Var: one fused node with a hand-written backward.
#include "autodiff/var.h"
#include "tensor/random/generator.h"

namespace ruccl::autodiff {

/// softmax(q kᵀ / sqrt(D) + mask) v, as torch.nn.functional.scaled_dot_product_attention (PyTorch
/// 2.0; 1.13 composes it from matmul and softmax, with the same values).
///
/// Shapes: q [..., T, D], k [..., S, D], v [..., S, Dv] -> [..., T, Dv], the leading dims equal
/// ([B, H, T, D] for multi-head attention; T may differ from S). All three share a floating dtype
/// and device.
/// - `attn_mask` (optional, a constant): broadcastable to [..., T, S]. A Bool mask says which
///   positions take part (true = attend, as PyTorch's SDPA; false = score -inf); a floating mask
///   of q's dtype is added to the scores.
/// - `is_causal`: query i attends to keys j <= i (the top-left aligned lower triangle, as
///   PyTorch's is_causal); ValueError together with attn_mask (as PyTorch).
/// - `dropout_p` in [0, 1): drops attention probabilities with uniform draws from `generator`
///   (or, without one, from the default generator) and scales the rest by 1 / (1 - dropout_p).
///
/// Memory: the scores are one [..., T, S] tensor, scaled, masked and softmaxed in place; backward
/// keeps only these probabilities (plus the Bool dropout mask and the [..., T, Dv] output).
/// Backward (dO the output's gradient, P the probabilities, P' = P with dropout applied):
///   dV = P'ᵀ dO;  dP = (dO vᵀ) with dropout applied;  dS = P ∘ (dP − rowsum(dO ∘ O));
///   dQ = dS k / sqrt(D);  dK = dSᵀ q / sqrt(D)   (rowsum(dP ∘ P) = rowsum(dO ∘ O)).
/// Errors: ShapeError for ranks or sizes that do not fit, DTypeError for dtypes, ValueError for
/// dropout_p or causal + mask.
Var scaled_dot_product_attention(const Var& q, const Var& k, const Var& v,
                                 const Tensor& attn_mask = {}, bool is_causal = false,
                                 double dropout_p = 0.0, Generator* generator = nullptr);

}  // namespace ruccl::autodiff
