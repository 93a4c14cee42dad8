// CudaBackend::sgd_update and adam_update: checks here, the fused kernels in
// cuda/kernels/optimizer.cu.
#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/tensor_refs.h"
#include "cuda/kernels/optimizer_kernels.h"

namespace ruccl::cuda {

namespace {

void check_operand(const char* op, const Tensor& param, const Tensor& t, const char* what) {
  check_same_device(op, param, t);
  RUCCL_CHECK(t.dtype() == param.dtype() && t.numel() == param.numel() && t.is_contiguous(),
              ValueError, op, ": expected a contiguous ", what, " of ", param.numel(), " ",
              param.dtype(), " elements, got ", t.numel(), " ", t.dtype(),
              t.is_contiguous() ? "" : " (not contiguous)");
}

}  // namespace

void CudaBackend::sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                             const SgdStep& step) {
  check_supported(*this, Op::SgdUpdate, param.dtype());
  RUCCL_CHECK(param.is_contiguous(), ValueError, "sgd_update: expected a contiguous parameter");
  check_operand("sgd_update", param, grad, "gradient");
  const bool momentum = step.momentum != 0.0;
  if (momentum) check_operand("sgd_update", param, momentum_buffer, "momentum buffer");
  const ScopedDevice scope(param.device());
  launch_sgd(param.dtype() == DType::F64, param.data_ptr(), grad.data_ptr(),
             momentum ? momentum_buffer.data_ptr() : nullptr, param.numel(), step,
             stream_for(param.device()));
}

void CudaBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                              const Tensor& exp_avg_sq, const AdamStep& step) {
  check_supported(*this, Op::AdamUpdate, param.dtype());
  RUCCL_CHECK(param.is_contiguous(), ValueError, "adam_update: expected a contiguous parameter");
  check_operand("adam_update", param, grad, "gradient");
  check_operand("adam_update", param, exp_avg, "exp_avg");
  check_operand("adam_update", param, exp_avg_sq, "exp_avg_sq");
  const ScopedDevice scope(param.device());
  launch_adam(param.dtype() == DType::F64, param.data_ptr(), grad.data_ptr(), exp_avg.data_ptr(),
              exp_avg_sq.data_ptr(), param.numel(), step, stream_for(param.device()));
}

}  // namespace ruccl::cuda
