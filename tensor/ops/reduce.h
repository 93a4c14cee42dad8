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

/// Sum over `dims`: sum(x, {0, 2}), sum(x, {-1}, true). I32/Bool give I64.
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// Sum over one dim.
Tensor sum(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Sum of every element, a 0-d tensor.
Tensor sum(const Tensor& x);
/// Mean over `dims` (floating dtypes; integers are a DTypeError).
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// Mean over one dim.
Tensor mean(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Mean of every element, a 0-d tensor.
Tensor mean(const Tensor& x);
/// Product along `dim` (I32/Bool give I64).
Tensor prod(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Largest value along `dim` (NaN propagates).
Tensor max(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Largest element (NaN propagates), a 0-d tensor; an empty tensor is an IndexError.
Tensor max(const Tensor& x);
/// Smallest value along `dim` (NaN propagates).
Tensor min(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Smallest element, a 0-d tensor.
Tensor min(const Tensor& x);
/// Index (I64) of the largest value along `dim`; the first one on ties.
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Index (I64) of the smallest value along `dim`; the first one on ties.
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim = false);
/// Product of every element, a 0-d tensor (I32/Bool give I64, as sum).
Tensor prod(const Tensor& x);
/// Index (I64, 0-d) of the largest element of the flattened tensor; the first one on ties.
Tensor argmax(const Tensor& x);
/// Index (I64, 0-d) of the smallest element of the flattened tensor.
Tensor argmin(const Tensor& x);
/// Variance with `correction` (0: population, 1: sample) over `dims` (floating dtypes; an empty
/// list means every dim). N - correction <= 0 divides by zero (inf or NaN), as PyTorch.
Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
           bool keepdim = false);
/// Variance over one dim.
Tensor var(const Tensor& x, std::int64_t dim, std::int64_t correction = 1, bool keepdim = false);

/// Numerically stable softmax along `dim` (floating dtypes): exp(x - max) / sum(exp(x - max)).
Tensor softmax(const Tensor& x, std::int64_t dim);
/// log(softmax(x)) computed as (x - max) - log(sum(exp(x - max))).
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace ruccl
