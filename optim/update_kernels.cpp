// The optimizer updates: argument checks, then the parameter's backend does the math
// (Backend::sgd_update / adam_update: tensor/backend/cpu/cpu_optimizer.cpp, the CUDA kernels).
#include "optim/update_kernels.h"

#include "tensor/backend/backend.h"

namespace ruccl::optim {
namespace {

void check_param(const char* op, const Tensor& param) {
  RUCCL_ASSERT(param.defined() && param.is_contiguous(), op,
               ": the parameter must be a contiguous tensor");
  RUCCL_ASSERT(param.dtype() == DType::F32 || param.dtype() == DType::F64, op,
               ": the parameter must be F32 or F64");
}

void check_operand(const char* op, const Tensor& t, const Tensor& param, const char* what) {
  RUCCL_ASSERT(t.defined() && t.is_contiguous() && t.device() == param.device(), op, ": ", what,
               " must be a contiguous tensor on the parameter's device");
  RUCCL_ASSERT(t.dtype() == param.dtype() && t.numel() == param.numel(), op, ": ", what,
               " must match the parameter's dtype and size");
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                bool first_step, double lr, const SgdOptions& options) {
  check_param("sgd_update", param);
  check_operand("sgd_update", grad, param, "grad");
  const bool momentum = options.momentum != 0.0;
  if (momentum) check_operand("sgd_update", momentum_buffer, param, "momentum buffer");
  const SgdStep step{.lr = lr,
                     .momentum = options.momentum,
                     .dampening = options.dampening,
                     .weight_decay = options.weight_decay,
                     .nesterov = options.nesterov,
                     .first_step = first_step};
  backend_for(param.device()).sgd_update(param, grad, momentum ? momentum_buffer : Tensor(), step);
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, std::int64_t step, double lr, const AdamOptions& options,
                 bool decoupled) {
  check_param("adam_update", param);
  RUCCL_ASSERT(step >= 1, "adam_update: step counts from 1");
  check_operand("adam_update", grad, param, "grad");
  check_operand("adam_update", exp_avg, param, "exp_avg");
  check_operand("adam_update", exp_avg_sq, param, "exp_avg_sq");
  const AdamStep s{.lr = lr,
                   .beta1 = options.beta1,
                   .beta2 = options.beta2,
                   .eps = options.eps,
                   .weight_decay = options.weight_decay,
                   .decoupled = decoupled,
                   .step = step};
  backend_for(param.device()).adam_update(param, grad, exp_avg, exp_avg_sq, s);
}

}  // namespace ruccl::optim
