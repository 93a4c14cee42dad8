#pragma once
#include "tensor/core/tensor.h"

namespace ruccl {

/// Matrix product with torch.matmul's rules: 1-d x 1-d is a dot product, 2-d x 2-d a matrix
/// product, and batched (>= 3-d) operands broadcast their batch dims. Floating dtypes only.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace ruccl
