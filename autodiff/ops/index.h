#pragma once
// Differentiable indexing on Var. Index tensors are plain I64/I32 Tensors (not differentiable).
#include <cstdint>

#include "autodiff/var.h"

namespace ruccl::autodiff {

/// Rows of `x` along `dim` picked by the 1-d `index`; backward index_adds the gradient (repeated
/// indices accumulate).
Var index_select(const Var& x, std::int64_t dim, const Tensor& index);
/// torch.gather; backward scatter_adds the gradient (repeated indices accumulate).
Var gather(const Var& x, std::int64_t dim, const Tensor& index);

}  // namespace ruccl::autodiff
