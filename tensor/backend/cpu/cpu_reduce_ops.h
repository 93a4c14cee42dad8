#pragma once
// Reductions of the CPU backend that are not part of the generic reduce engine (cpu_reduce.cpp).
#include <cstdint>

#include "tensor/backend/backend.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

/// Argmax or Argmin of x along `dim` into the I64 `out` (x's shape with dim of size 1): the first
/// index of the extreme value, or of the first NaN when there is one (as PyTorch).
void arg_reduce(Op op, const Tensor& x, std::int64_t dim, const Tensor& out);

}  // namespace ruccl::cpu
