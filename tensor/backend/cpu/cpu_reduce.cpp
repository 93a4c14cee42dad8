// PLACEHOLDER: replaced by the tensor-ops work.
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/tensor.h"
namespace ruccl::cpu {
void CpuBackend::reduce(Op op, const Tensor&, std::span<const std::int64_t>, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
void CpuBackend::softmax(Op op, const Tensor&, std::int64_t, const Tensor&) { throw NotImplementedError(str("not implemented: cpu::", op_name(op))); }
}  // namespace ruccl::cpu
