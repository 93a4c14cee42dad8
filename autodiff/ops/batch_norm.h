#pragma once
// Batch normalisation as one differentiable op (torch.nn.functional.batch_norm): the forward is
// two passes over x (per-channel statistics, then the normalise-and-affine), the backward two
// more (per-channel sums of the gradient, then the input's gradient), each a CPU kernel
// (tensor/ops/batch_norm.h). nn::BatchNorm1d / BatchNorm2d run on it; SyncBatchNorm keeps its
// composite with the differentiable collectives.
//
// Backward, with xhat = (x - mean) * invstd, invstd = 1 / sqrt(var + eps), n values per channel:
//   d bias   = Σ g                    d weight = Σ g (x - mean) * invstd    (sums per channel)
//   training: d x = (g - Σ g / n - (x - mean) * invstd^2 * Σ g (x - mean) / n) * invstd * weight
//   evaluation (running statistics, constants): d x = g * invstd * weight
// The running statistics are buffers: no gradient reaches them.
#include "autodiff/var.h"

namespace ruccl::autodiff {

/// y = (x - mean) / sqrt(var + eps) * weight + bias per channel of x [N, C, ...] (dim 1).
/// training: mean and var are the batch's (population variance), and when running_mean and
/// running_var are given (both [C], or both undefined) they are updated in place: running =
/// (1 - momentum) * running + momentum * batch, with the unbiased variance var * n / (n - 1)
/// (ValueError unless each channel has n > 1 values). Evaluation: the running statistics
/// (required) replace the batch's. weight and bias ([C]) are each optional (undefined: 1 and 0).
/// F32 or F64 on a backend that supports Op::BatchNorm (NotImplementedError otherwise); errors
/// name "batch_norm".
Var batch_norm(const Var& x, const Tensor& running_mean, const Tensor& running_var,
               const Var& weight, const Var& bias, bool training, double momentum = 0.1,
               double eps = 1e-5);

}  // namespace ruccl::autodiff
