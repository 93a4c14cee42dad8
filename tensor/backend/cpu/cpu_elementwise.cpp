// PLACEHOLDER: replaced by the tensor-ops work.
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/tensor.h"
namespace ruccl::cpu {
bool CpuBackend::supports(Op, DType) const { return true; }
void CpuBackend::unary(Op op, const Tensor&, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::binary(Op op, const Tensor&, const Tensor&, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::where"); }
}  // namespace ruccl::cpu
