#pragma once
// ReduceKernel: the type-erased elementwise combine the algorithms use (gloo's style: pointer,
// element count, dtype), so algorithm code is compiled once, not per dtype.
//
// Kernels exist for the accumulation dtypes F32, F64, I32, I64 (F16/BF16 are reduced in F32 by
// the Communicator and rounded once at the end). The combine is always `acc = acc (op) next`
// with the accumulated value on the left; integer Sum/Prod wrap around (two's complement);
// Min/Max propagate the first NaN met; Mean combines like Sum and divides once in finish().
#include <cstddef>
#include <span>

#include "collective/common/reduce_operation.h"
#include "tensor/core/dtype.h"

namespace ruccl {

/// One (dtype, op) pair's elementwise functions.
class ReduceKernel {
 public:
  /// `dtype` must be F32, F64, I32 or I64 and `op` valid for it (checked by the caller).
  ReduceKernel(DType dtype, ReduceOperation op);

  DType dtype() const { return dtype_; }
  ReduceOperation op() const { return op_; }
  std::size_t element_size() const { return element_size_; }

  /// out[i] = a[i] (op) b[i] for i < count. `out` may alias `a` or `b`.
  void combine(void* out, const void* a, const void* b, std::size_t count) const;
  /// out[i] = ((src[0][i] (op) src[1][i]) (op) src[2][i]) ... for i < count: a left fold in the
  /// order given. `out` must not alias any source. One source is a copy.
  void fold(void* out, std::span<const void* const> sources, std::size_t count) const;
  /// Mean: data[i] /= world_size (in the accumulation dtype). Other ops: nothing.
  void finish(void* data, std::size_t count, int world_size) const;

 private:
  using CombineFn = void (*)(void* out, const void* a, const void* b, std::size_t count);
  using FinishFn = void (*)(void* data, std::size_t count, int world_size);
  DType dtype_;
  ReduceOperation op_;
  std::size_t element_size_;
  CombineFn combine_;
  FinishFn finish_ = nullptr;
};

/// memcpy that accepts null pointers when nbytes == 0.
void copy_bytes(void* dst, const void* src, std::size_t nbytes);

}  // namespace ruccl
