#include "cuda/collective/device_streams.h"

#include "cuda/core/check.h"
#include "cuda/core/stream.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {

cudaStream_t collective_stream(Device device) { return current_stream(device.index); }

std::function<void()> carry_collective_stream(Device device) {
  const cudaStream_t stream = collective_stream(device);
  return [device, stream] { set_current_stream(device.index, stream); };
}

fold::Elem fold_elem(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return fold::Elem::F32;
    case DType::F64:
      return fold::Elem::F64;
    case DType::I32:
      return fold::Elem::I32;
    case DType::I64:
      return fold::Elem::I64;
    default:
      throw DTypeError(
          str("device collectives: expected an accumulation dtype (F32, F64, I32, "
              "I64), got ",
              dtype));
  }
}

fold::Op fold_op(ReduceOperation op) {
  switch (op) {
    case ReduceOperation::Sum:
    case ReduceOperation::Mean:
      return fold::Op::Sum;
    case ReduceOperation::Prod:
      return fold::Op::Prod;
    case ReduceOperation::Min:
      return fold::Op::Min;
    case ReduceOperation::Max:
      return fold::Op::Max;
    case ReduceOperation::BitAnd:
      return fold::Op::BitAnd;
    case ReduceOperation::BitOr:
      return fold::Op::BitOr;
    case ReduceOperation::BitXor:
      return fold::Op::BitXor;
  }
  return fold::Op::Sum;
}

}  // namespace ruccl::cuda
