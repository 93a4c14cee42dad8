#pragma once
// Layer normalisation as one differentiable op (torch.nn.functional.layer_norm), on batch norm's
// per-channel kernels (tensor/ops/batch_norm.h): x viewed as [1, R, E] (R rows of the E
// normalised elements) makes each row a "channel", so the statistics, the normalisation and the
// backward's row sums are those kernels' passes; the affine is batch_norm_elemt on [R, E].
//
// Backward, with xhat = (x - mean) * invstd per row, gxhat = g * weight:
//   d weight = Σ_rows g xhat            d bias = Σ_rows g
//   d x = (gxhat - Σ gxhat / E - (x - mean) * invstd^2 * Σ gxhat (x - mean) / E) * invstd
// (sums over the row's E elements): batch norm's training-mode rule with rows for channels.
#include <cstdint>
#include <vector>

#include "autodiff/var.h"

namespace ruccl::autodiff {

/// Normalises x over its last normalized_shape.size() dims (which must equal normalized_shape),
/// then * weight + bias (each optional, of shape normalized_shape). F32 or F64 on a backend that
/// supports Op::BatchNorm (NotImplementedError otherwise); errors name "layer_norm".
Var layer_norm(const Var& x, const std::vector<std::int64_t>& normalized_shape, const Var& weight,
               const Var& bias, double eps = 1e-5);

}  // namespace ruccl::autodiff
