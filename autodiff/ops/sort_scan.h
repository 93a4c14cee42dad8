#pragma once
// Differentiable cumsum, sort and topk (tensor/ops/sort_scan.h's names and semantics).
#include "autodiff/var.h"

namespace ruccl::autodiff {

/// sort's and topk's result: the values (differentiable) and their positions (I64, constant).
struct VarIndices {
  Var values;
  Tensor indices;
};

/// Inclusive prefix sums along `dim`; the gradient is the reversed cumsum of g (sums from the end).
Var cumsum(const Var& x, std::int64_t dim);
/// Sorted along `dim` (stable); the gradient of values scatters back to x at `indices`.
VarIndices sort(const Var& x, std::int64_t dim = -1, bool descending = false, bool stable = false);
/// The k largest (smallest) along `dim`; the gradient scatters to x at `indices`, zero elsewhere.
VarIndices topk(const Var& x, std::int64_t k, std::int64_t dim = -1, bool largest = true,
                bool sorted = true);

}  // namespace ruccl::autodiff
