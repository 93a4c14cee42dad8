#pragma once
// Differentiable masking ops (tensor/ops/masking.h's names and semantics).
#include "autodiff/var.h"
#include "tensor/core/scalar.h"

namespace ruccl::autodiff {

/// x with `value` where the Bool `mask` (broadcast to x) is true; the gradient is zero there.
Var masked_fill(const Var& x, const Tensor& mask, Scalar value);
/// The lower triangle of the last two dims; the gradient is tril(g, diagonal).
Var tril(const Var& x, std::int64_t diagonal = 0);
/// The upper triangle; the gradient is triu(g, diagonal).
Var triu(const Var& x, std::int64_t diagonal = 0);

}  // namespace ruccl::autodiff
