#pragma once
// ReduceOperation: how all_reduce / reduce / reduce_scatter combine the ranks' values.
#include <string_view>

#include "tensor/core/dtype.h"

namespace ruccl {

/// Sum, Mean (= Sum / world size; floating dtypes only), Prod, Min, Max, and the bitwise
/// BitAnd, BitOr, BitXor (I32/I64 only). Min/Max propagate NaN.
enum class ReduceOperation : unsigned char { Sum, Mean, Prod, Min, Max, BitAnd, BitOr, BitXor };

/// "Sum", "Mean", ...; "" for a value that is not a ReduceOperation (ReduceOperation(42)).
std::string_view reduce_operation_name(ReduceOperation op);

/// Whether `op` is one of the enumerators (a cast integer may not be).
inline bool is_valid(ReduceOperation op) { return !reduce_operation_name(op).empty(); }

/// Whether `op` may reduce tensors of `dtype` (F16/BF16/F32/F64/I32/I64; never Bool; false for
/// an invalid op).
bool reduce_operation_supports(ReduceOperation op, DType dtype);

}  // namespace ruccl
