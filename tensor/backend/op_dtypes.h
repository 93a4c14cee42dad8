#pragma once
// Which dtypes each op is defined for: one table for every backend, so supports(op, dtype)
// answers alike on every device unless a backend says otherwise (and the kernels' dtype dispatch
// instantiates only these).
#include "tensor/backend/backend.h"
#include "tensor/core/dtype.h"

namespace ruccl {

/// A set of dtypes an op takes.
enum class DTypeSet : std::uint8_t { kAll, kNumeric, kFloating, kBool };

constexpr bool accepts(DTypeSet set, DType dtype) {
  switch (set) {
    case DTypeSet::kAll:
      return true;
    case DTypeSet::kNumeric:
      return dtype != DType::Bool;
    case DTypeSet::kFloating:
      return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 ||
             dtype == DType::F64;
    case DTypeSet::kBool:
      return dtype == DType::Bool;
  }
  return false;
}

/// The dtypes `op` takes (its main input's dtype). The optimizer updates and im2col/col2im take
/// F32 and F64 only, which no set names: op_supports answers them.
DTypeSet dtypes_of(Op op);

/// Whether `op` is defined for `dtype`: dtypes_of(op), and F32/F64 for the optimizer updates.
bool op_supports(Op op, DType dtype);

}  // namespace ruccl
