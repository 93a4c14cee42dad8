// PLACEHOLDER: replaced by the tensor-ops work.
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/tensor.h"
namespace ruccl::cpu {
void CpuBackend::matmul(const Tensor&, const Tensor&, const Tensor&) { throw NotImplementedError("not implemented: cpu::matmul"); }
void set_num_threads(int) {}
int num_threads() { return 1; }
}  // namespace ruccl::cpu
