#pragma once
// Which dtypes each op accepts on the CUDA backend: the CPU backend's table (cpu_elementwise.cpp),
// so that supports(op, dtype) answers the same on both devices. Host-only (no CUDA include): the
// backend's supports() and the kernels' dispatch both read it.
#include "tensor/backend/backend.h"
#include "tensor/core/dtype.h"

namespace ruccl::cuda {

/// A set of dtypes.
enum class Kinds { kAll, kNumeric, kFloating, kBool };

constexpr bool accepts(Kinds k, DType dtype) {
  switch (k) {
    case Kinds::kAll:
      return true;
    case Kinds::kNumeric:
      return dtype != DType::Bool;
    case Kinds::kFloating:
      return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 ||
             dtype == DType::F64;
    case Kinds::kBool:
      return dtype == DType::Bool;
  }
  return false;
}

/// The dtypes `op` accepts (its main input's dtype).
Kinds kinds_of(Op op);

}  // namespace ruccl::cuda
