// PLACEHOLDER: replaced by the tensor-ops work.
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/tensor.h"
namespace ruccl::cpu {
void CpuBackend::index_select(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::index_select"); }
void CpuBackend::gather(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::gather"); }
void CpuBackend::scatter_add(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::scatter_add"); }
void CpuBackend::index_add(const Tensor&, std::int64_t, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::index_add"); }
void CpuBackend::one_hot(const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::one_hot"); }
}  // namespace ruccl::cpu
