#include "collective/common/reduce_operation.h"

namespace ruccl {

std::string_view reduce_operation_name(ReduceOperation op) {
  switch (op) {
    case ReduceOperation::Sum:
      return "Sum";
    case ReduceOperation::Mean:
      return "Mean";
    case ReduceOperation::Prod:
      return "Prod";
    case ReduceOperation::Min:
      return "Min";
    case ReduceOperation::Max:
      return "Max";
    case ReduceOperation::BitAnd:
      return "BitAnd";
    case ReduceOperation::BitOr:
      return "BitOr";
    case ReduceOperation::BitXor:
      return "BitXor";
  }
  return "";
}

bool reduce_operation_supports(ReduceOperation op, DType dtype) {
  if (dtype == DType::Bool || !is_valid(op)) return false;
  switch (op) {
    case ReduceOperation::Mean:
      return is_floating(dtype);
    case ReduceOperation::BitAnd:
    case ReduceOperation::BitOr:
    case ReduceOperation::BitXor:
      return is_integral(dtype);
    default:
      return true;
  }
}

}  // namespace ruccl
