#pragma once
// Losses on Var (also exported as ruccl::nn::mse_loss / cross_entropy).
#include "autodiff/var.h"

namespace ruccl::autodiff {

/// How a loss combines its per-element terms.
enum class Reduction { Mean, Sum };

/// (pred - target)^2, averaged (Mean) or summed (Sum) over every element; shapes broadcast.
Var mse_loss(const Var& pred, const Var& target, Reduction reduction = Reduction::Mean);
/// Cross-entropy of `logits` [N, C] (or [C]) against class indices `targets` [N] (or 0-d), I64 or
/// I32 in [0, C). Fused with log_softmax for stability: backward (softmax - one_hot) * g (/ N for
/// Mean). IndexError for a target out of range.
Var cross_entropy(const Var& logits, const Tensor& targets, Reduction reduction = Reduction::Mean);

}  // namespace ruccl::autodiff
