#pragma once
// Indexing. Index tensors are I64 or I32; every index is bounds-checked (IndexError names it).
#include "tensor/core/tensor.h"

namespace ruccl {

/// Rows (along `dim`) picked by the 1-d `index`.
Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index);
/// out[i][j] = x[index[i][j]][j] for dim 0 (torch.gather); index has x's rank.
Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index);
/// A copy of `x` with src added at the positions gather would read (torch.scatter_add).
Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
/// A copy of `x` with src's slices added at rows index[j] along `dim` (torch.index_add).
Tensor index_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
/// I64 tensor of shape indices.shape + [num_classes] with a 1 at each index.
Tensor one_hot(const Tensor& indices, std::int64_t num_classes);

}  // namespace ruccl
