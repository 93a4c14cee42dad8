#pragma once
// Reductions over any set of dims (negative dims count from the end, each at most once), with
// keepdim. An empty dim list reduces over every dim. Sums of F16/BF16 accumulate in F32 (the CPU
// backend uses double) and round once; sums and products of I32/Bool give I64; mean needs a
// floating dtype. max/min/argmax/argmin over an empty dim are an IndexError; the sum over one is
// 0, the product 1, the mean NaN. See tensor/backend/cpu/cpu_reduce_kernels.h for the summation
// order (fixed: results do not depend on the thread count).
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl {

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
Tensor sum(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Sum of every element, a 0-d tensor.
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor prod(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Largest value along `dim` (NaN propagates).
Tensor max(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor max(const Tensor& x);
Tensor min(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
/// Index (I64) of the largest value along `dim`; the first one on ties.
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Product of every element, a 0-d tensor (I32/Bool give I64, as sum).
Tensor prod(const Tensor& x);
/// Index (I64, 0-d) of the largest element of the flattened tensor; the first one on ties.
Tensor argmax(const Tensor& x);
Tensor argmin(const Tensor& x);
/// Variance with `correction` (0: population, 1: sample) over `dims` (floating dtypes; an empty
/// list means every dim). N - correction <= 0 divides by zero (inf or NaN), as PyTorch.
Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
           bool keepdim = false);
Tensor var(const Tensor& x, std::int64_t dim, std::int64_t correction = 1, bool keepdim = false);

/// Numerically stable softmax along `dim` (floating dtypes).
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace ruccl
