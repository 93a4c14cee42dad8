#pragma once
// Losses on Var (also exported in namespace ruccl::nn by autodiff/nn/loss.h).
#include <cstdint>

#include "autodiff/var.h"

namespace ruccl::autodiff {

/// How a loss combines its per-element terms.
enum class Reduction { Mean, Sum };

/// (pred - target)^2, averaged (Mean) or summed (Sum) over every element; shapes broadcast.
Var mse_loss(const Var& pred, const Var& target, Reduction reduction = Reduction::Mean);

/// Options of cross_entropy and nll_loss (torch.nn.functional's keywords). Every member has a
/// default: `cross_entropy(x, y, {.ignore_index = 0, .label_smoothing = 0.1})`.
struct ClassLossOptions {
  Reduction reduction = Reduction::Mean;
  /// Targets equal to this take no part: zero loss, zero gradient, not counted by Mean.
  std::int64_t ignore_index = -100;
  /// ε in [0, 1]: the target distribution is (1 − ε) one_hot + ε / C (cross_entropy only).
  double label_smoothing = 0.0;
  /// Optional class weights [C], of the input's dtype and device (a constant).
  Tensor weight = Tensor();
};

/// Cross-entropy of `logits` against class indices, fused with log_softmax for stability, with
/// PyTorch's semantics: logits [N, C], [C] (one sample) or [N, C, d1, ...] (class dim 1), targets
/// [N], 0-d or [N, d1, ...], I64 or I32, each in [0, C) or equal to ignore_index.
///
/// Per sample i (w = weight, 1 without; valid_i = target_i != ignore_index; lsm = log_softmax):
///   nll_i = −w[t_i] lsm[i, t_i],  smooth_i = −Σ_c w[c] lsm[i, c]   (both 0 where not valid)
///   loss = (1 − ε) N + (ε / C) S,  N = Σ nll_i / D,  S = Σ smooth_i / D'
/// with D = D' = 1 for Sum and, for Mean, D = D' = Σ_valid w[t_i] (the number of samples not
/// ignored, without weights): PyTorch 1.13's rule.
/// Backward: (G − softmax · rowsum(G)) · g, G = d loss / d lsm.
/// Errors: ShapeError (ranks, sizes), DTypeError (non-integer targets, floating logits, weight
/// dtype), IndexError (a target out of range), ValueError (label_smoothing outside [0, 1]).
Var cross_entropy(const Var& logits, const Tensor& targets, const ClassLossOptions& options);
/// The original form: cross_entropy(logits, targets, {.reduction = reduction}).
Var cross_entropy(const Var& logits, const Tensor& targets, Reduction reduction = Reduction::Mean);

/// Negative log-likelihood of `log_probs` (log_softmax output) against class indices: the nll
/// term of cross_entropy, same shapes, weight, ignore_index and Mean rule (label_smoothing must
/// be 0). Backward: d loss / d log_probs[i, t_i] = −w[t_i] / D · g, zero elsewhere.
Var nll_loss(const Var& log_probs, const Tensor& targets, const ClassLossOptions& options = {});

/// Options of binary_cross_entropy_with_logits.
struct BceOptions {
  Reduction reduction = Reduction::Mean;
  /// Optional weight of each element, broadcastable to the input (a constant).
  Tensor weight = Tensor();
  /// Optional weight of the positive term, broadcastable to the input (per class: [C]).
  Tensor pos_weight = Tensor();
};

/// Binary cross-entropy on logits x against targets y in [0, 1] (same shape), stable for any x:
///   l = w · [(1 − y) x + (1 + (pw − 1) y) · softplus(−x)],  softplus(−x) = log(1 + e^−|x|) +
///   max(−x, 0); Mean averages over every element. Backward: w · [(1 − y) − (1 + (pw − 1) y) ·
///   sigmoid(−x)] · g (σ(x) − y without pos_weight). The targets are constants.
Var binary_cross_entropy_with_logits(const Var& input, const Tensor& target,
                                     const BceOptions& options = {});

}  // namespace ruccl::autodiff
