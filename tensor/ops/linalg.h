#pragma once
#include "tensor/core/tensor.h"

namespace ruccl {

/// Matrix product with torch.matmul's rules: 1-d x 1-d is a dot product, 2-d x 2-d a matrix
/// product, and batched (>= 3-d) operands broadcast their batch dims. Floating dtypes only.
Tensor matmul(const Tensor& a, const Tensor& b);
/// matmul(a, b) written into `out` (torch.matmul(a, b, out=out)), which must already have the
/// result's shape, dtype and device; reusing `out` avoids allocating (and page-faulting) a fresh
/// result on every call. An `out` that shares storage with `a` or `b` is handled (computed aside).
void matmul_out(const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace ruccl
