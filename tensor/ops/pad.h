#pragma once
// pad (torch.nn.functional.pad) and flatten / unflatten on Tensors.
#include <cstdint>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl {

/// How pad fills the new elements: a constant, the mirror image without the edge (torch's
/// "reflect": [a b c] padded by 2 on the left is [c b a b c]), or copies of the edge
/// ("replicate").
enum class PadMode { Constant, Reflect, Replicate };

/// torch.nn.functional.pad: `pads` holds (before, after) pairs starting from the last dim
/// ({left, right, top, bottom} pads W then H), at most x.dim() pairs, each >= 0. Reflect needs
/// each pad smaller than its dim; reflect and replicate need a non-empty dim. `value` is the
/// constant of PadMode::Constant.
Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads, PadMode mode = PadMode::Constant,
           double value = 0.0);

/// For Reflect / Replicate: the source index along one dim of size `size` of every element of the
/// padded dim (I64 [before + size + after]).
Tensor pad_source_index(std::int64_t size, std::int64_t before, std::int64_t after, PadMode mode,
                        Device device);
/// The checked (before, after) pairs of pad(x, pads, mode), one per dim of x (zeros where
/// `pads` says nothing).
std::vector<std::pair<std::int64_t, std::int64_t>> pad_widths(const Tensor& x,
                                                              const std::vector<std::int64_t>& pads,
                                                              PadMode mode);

/// x with dims [start, end] merged into one (a view when it can be), as Tensor::flatten.
Tensor flatten(const Tensor& x, std::int64_t start = 0, std::int64_t end = -1);
/// x with dim `dim` split into `sizes` (their product must be its size; one -1 is inferred).
Tensor unflatten(const Tensor& x, std::int64_t dim, const std::vector<std::int64_t>& sizes);

}  // namespace ruccl
