#pragma once
// Joining and splitting. Views where possible (split, chunk); cat and stack copy.
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl {

/// Concatenation along `dim`; every other dim must match, dtypes promote, one device.
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Joins equal-shaped tensors along a new dim.
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
/// Pieces of `split_size` along `dim` (the last may be smaller); views.
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim = 0);
/// Pieces with the given sizes along `dim`; they must sum to the dim's size.
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes,
                          std::int64_t dim = 0);
/// `chunks` pieces as torch.chunk (size ceil(n / chunks), the last smaller); views.
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim = 0);

}  // namespace ruccl
