#include "tensor/backend/op_dtypes.h"

namespace ruccl {

DTypeSet dtypes_of(Op op) {
  switch (op) {
    case Op::Copy:
    case Op::Fill:
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Where:
    case Op::Sum:
    case Op::Prod:
    case Op::Max:
    case Op::Min:
      return DTypeSet::kAll;
    case Op::Neg:
    case Op::Abs:
    case Op::Relu:
    case Op::Sign:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Maximum:
    case Op::Minimum:
    case Op::Argmax:
    case Op::Argmin:
    case Op::IndexSelect:
    case Op::Gather:
    case Op::ScatterAdd:
    case Op::IndexAdd:
    case Op::OneHot:
    case Op::AddInPlace:
    case Op::SubInPlace:
    case Op::MulInPlace:
    case Op::IsNan:
    case Op::IsFinite:
    case Op::Cumsum:
    case Op::Sort:
      return DTypeSet::kNumeric;
    case Op::Exp:
    case Op::Log:
    case Op::Sqrt:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Gelu:
    case Op::Div:
    case Op::DivInPlace:
    case Op::Pow:
    case Op::Mean:
    case Op::Matmul:
    case Op::Softmax:
    case Op::LogSoftmax:
    case Op::Sin:
    case Op::Cos:
    case Op::Silu:
    case Op::Rsqrt:
    case Op::Erf:
    case Op::Log1p:
    case Op::Expm1:
    case Op::LeakyRelu:
    case Op::Elu:
    case Op::Softplus:
      return DTypeSet::kFloating;
    case Op::LogicalAnd:
    case Op::LogicalOr:
    case Op::LogicalNot:
      return DTypeSet::kBool;
    case Op::SgdUpdate:  // F32 and F64 only: op_supports answers them
    case Op::AdamUpdate:
    case Op::Im2col:
    case Op::Col2im:
    case Op::BatchNorm:
    case Op::kCount:
      break;
  }
  return DTypeSet::kBool;  // unreachable for valid ops
}

bool op_supports(Op op, DType dtype) {
  if (op == Op::SgdUpdate || op == Op::AdamUpdate || op == Op::Im2col || op == Op::Col2im ||
      op == Op::BatchNorm) {
    return dtype == DType::F32 || dtype == DType::F64;
  }
  return accepts(dtypes_of(op), dtype);
}

}  // namespace ruccl
