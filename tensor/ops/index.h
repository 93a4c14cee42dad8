#pragma once
// Indexing. Index tensors are I64 or I32; every index is bounds-checked (IndexError names the
// value and its position). Negative indices are errors, not counted from the end. scatter_add and
// index_add add repeated indices in index order, so results are deterministic.
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
/// I64 tensor of shape indices.shape + [num_classes] with a 1 at each index; num_classes = -1
/// infers max(indices) + 1 (as torch.nn.functional.one_hot).
Tensor one_hot(const Tensor& indices, std::int64_t num_classes);

}  // namespace ruccl
