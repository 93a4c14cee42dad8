#pragma once
// Batch normalisation's per-channel passes on Tensors (PyTorch's native batch_norm_stats,
// batch_norm_elemt, batch_norm_backward_reduce, batch_norm_backward_elemt): the pieces that
// autodiff::batch_norm (autodiff/ops/batch_norm.h) puts together. x is [N, C, ...] with the
// channels in dim 1; the per-channel tensors are [C]; F32 or F64, one dtype and device
// throughout. Sums accumulate in double. A backend without the kernels (supports(Op::BatchNorm,
// dtype) false) raises NotImplementedError.
#include "tensor/core/tensor.h"

namespace ruccl {

/// A channel's batch mean and population variance (Σ (x - mean)^2 / count), each [C].
struct BatchNormStats {
  Tensor mean;
  Tensor var;
};

/// The per-channel sums of batch norm's backward: Σ dy and Σ dy (x - mean), each [C].
struct BatchNormGradSums {
  Tensor sum_dy;
  Tensor sum_dy_xmu;
};

/// Mean and population variance of each channel of x [N, C, ...] (ValueError when a channel
/// has no values).
BatchNormStats batch_norm_stats(const Tensor& x);
/// x * scale[c] + shift[c] (scale, shift [C]).
Tensor batch_norm_elemt(const Tensor& x, const Tensor& scale, const Tensor& shift);
/// Σ dy and Σ dy (x - mean[c]) per channel (dy: x's shape).
BatchNormGradSums batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& mean);
/// (dy - mean_dy[c] - (x - mean[c]) * proj[c]) * scale[c].
Tensor batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                 const Tensor& mean_dy, const Tensor& proj, const Tensor& scale);

}  // namespace ruccl
