#pragma once
// The optimizers' updates: their options, and one update of one parameter, done by the
// parameter's backend (Backend::sgd_update / adam_update) on its device, mirroring torch.optim's
// single-tensor code (torch 1.13) operation by operation in the parameter's float type.
#include <cstdint>

#include "tensor/core/tensor.h"

namespace ruccl::optim {

// Every member of an options struct carries its own default, so a designated initializer that
// names one member (`AdamW({.eps = 1e-6})`) keeps torch's default for every other.

/// torch.optim.SGD's hyper-parameters (lr is passed per step).
struct SgdOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

/// torch.optim.Adam's hyper-parameters (lr is passed per step).
struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  ///< L2, added to the gradient
};

/// torch.optim.AdamW's hyper-parameters (lr is passed per step): a type of its own, since its
/// default weight decay is torch's 1e-2, not Adam's 0.
struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;  ///< decoupled: p *= 1 - lr * weight_decay
};

/// One SGD update in place. `param`, `grad` and (when momentum != 0) `momentum_buffer` are
/// contiguous tensors on one device, of one dtype, F32 or F64, with equal element counts.
/// `first_step` says the buffer holds nothing yet (torch's `buf is None`): it is then set to the
/// decayed gradient.
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                bool first_step, double lr, const SgdOptions& options);

/// One Adam (decoupled = false) or AdamW (decoupled = true) update in place; `step` is the 1-based
/// step count after this update (bias correction 1 − beta^step). Same tensor requirements as
/// sgd_update, plus `exp_avg` and `exp_avg_sq`.
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, std::int64_t step, double lr, const AdamOptions& options,
                 bool decoupled);

}  // namespace ruccl::optim
