#pragma once
// Reductions over any set of dims (negative dims count from the end), with keepdim. An empty dim
// list reduces over every dim. Sums of F16/BF16 accumulate in F32; of I32/Bool give I64.
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
/// Variance with `correction` (0: population, 1: sample) over `dims`.
Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
           bool keepdim = false);

/// Numerically stable softmax along `dim` (floating dtypes).
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

}  // namespace ruccl
