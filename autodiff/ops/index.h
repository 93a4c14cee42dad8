#pragma once
// Differentiable indexing on Var. Index tensors are plain I64/I32 Tensors (not differentiable).
#include <cstdint>
#include <initializer_list>
#include <span>

#include "autodiff/var.h"

namespace ruccl::autodiff {

/// Rows of `x` along `dim` picked by the 1-d `index`; backward index_adds the gradient (repeated
/// indices accumulate).
Var index_select(const Var& x, std::int64_t dim, const Tensor& index);
/// torch.gather; backward scatter_adds the gradient (repeated indices accumulate).
Var gather(const Var& x, std::int64_t dim, const Tensor& index);
/// x.index({Slice(0, 2), 3}) on the tape (the index list as Tensor::index: integers, slices,
/// None, Ellipsis, one tensor). One node; backward writes the gradient into zeros of x's shape
/// at the indexed elements (index_add for a tensor index, so repeated entries accumulate).
Var index(const Var& x, std::span<const indexing::TensorIndex> indices);
Var index(const Var& x, std::initializer_list<indexing::TensorIndex> indices);

}  // namespace ruccl::autodiff
