#pragma once
// Masking ops (attention masks, causal structure), PyTorch's names and semantics. Each is one
// where() over x, so it runs on any backend that has where.
//
//   Tensor scores = masked_fill(logits, causal_mask, -inf);  // mask is Bool, broadcast to logits
//   Tensor lower = tril(Tensor::ones({4, 4}));               // keeps j <= i
#include "tensor/core/tensor.h"

namespace ruccl {

/// x with `value` (converted to x's dtype) where `mask` is true. `mask` is Bool and broadcasts to
/// x's shape (the result has x's shape): DTypeError / ShapeError otherwise.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// The lower triangle of the last two dims of x (at least 2-d): element [.., i, j] is kept where
/// j - i <= diagonal, zero elsewhere (diagonal 0: the main diagonal; > 0 above it; < 0 below).
Tensor tril(const Tensor& x, std::int64_t diagonal = 0);
/// The upper triangle: element [.., i, j] kept where j - i >= diagonal, zero elsewhere.
Tensor triu(const Tensor& x, std::int64_t diagonal = 0);
/// The Bool mask tril/triu keep, of shape [rows, cols] on `device`: j - i <= diagonal (lower) or
/// j - i >= diagonal (upper).
Tensor triangle_mask(std::int64_t rows, std::int64_t cols, std::int64_t diagonal, bool lower,
                     Device device = Device::cpu());

}  // namespace ruccl
