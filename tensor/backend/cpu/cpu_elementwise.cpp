// PLACEHOLDER: replaced by the tensor-ops work.
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/tensor.h"
namespace ruccl::cpu {
bool CpuBackend::supports(Op, DType) const { return true; }
void CpuBackend::unary(Op op, const Tensor&, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::binary(Op op, const Tensor&, const Tensor&, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::where"); }
void CpuBackend::reduce(Op op, const Tensor&, std::span<const std::int64_t>, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::softmax(Op op, const Tensor&, std::int64_t, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::matmul(const Tensor&, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::matmul"); }
void CpuBackend::index_select(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::index_select"); }
void CpuBackend::gather(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::gather"); }
void CpuBackend::scatter_add(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::scatter_add"); }
void CpuBackend::index_add(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::index_add"); }
void CpuBackend::one_hot(const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::one_hot"); }
void set_num_threads(int) {}
int num_threads() { return 1; }
}  // namespace ruccl::cpu
