#pragma once
// Ops along one dim (negative dims count from the end; a 0-d tensor takes dim 0 or -1): prefix
// sums and sorting, PyTorch's names and semantics. NaN sorts above every number (torch.sort).
//
//   Tensor c = cumsum(x, -1);                       // running totals along the last dim
//   auto [values, indices] = topk(logits, 5);       // the 5 largest along the last dim
//   auto [sorted, order] = sort(x, 0, true);        // descending along dim 0, I64 positions
#include "tensor/core/tensor.h"

namespace ruccl {

/// Values in order and their positions (I64) along the sorted dim: sort's and topk's result.
struct ValuesIndices {
  Tensor values;
  Tensor indices;
};

/// Inclusive prefix sums along `dim`: out[i] = x[0] + ... + x[i] (numeric dtypes; floating keep
/// their dtype, integers and Bool give I64 as torch; F16/BF16 and F32 accumulate in double).
/// `reverse` sums from the end, out[i] = x[i] + ... + x[n-1] (torch has no such flag: it is
/// cumsum's backward, flip(cumsum(flip(x)))).
Tensor cumsum(const Tensor& x, std::int64_t dim, bool reverse = false);
/// x sorted along `dim` (numeric dtypes), ascending unless `descending`, with each value's
/// position in x. Always stable (equal values keep their order), so `stable` only documents the
/// caller's intent (torch.sort(stable=True)).
ValuesIndices sort(const Tensor& x, std::int64_t dim = -1, bool descending = false,
                   bool stable = false);
/// The k largest (or, with largest = false, smallest) values along `dim` with their positions,
/// in sorted order (also when `sorted` is false, which torch leaves unspecified); ties keep the
/// order of position. k in [0, x.shape()[dim]], else a ValueError.
ValuesIndices topk(const Tensor& x, std::int64_t k, std::int64_t dim = -1, bool largest = true,
                   bool sorted = true);

}  // namespace ruccl
