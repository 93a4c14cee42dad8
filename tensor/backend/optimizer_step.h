#pragma once
// The hyper-parameters of one optimizer update as a backend receives them (Backend::sgd_update,
// Backend::adam_update). The math mirrors torch.optim's single-tensor code (torch 1.13); the
// optim layer's options types (optim/update_kernels.h) fill these in.
#include <cstdint>

namespace ruccl {

/// One torch.optim.SGD step.
struct SgdStep {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  /// The momentum buffer holds nothing yet (torch's `buf is None`): it becomes the decayed
  /// gradient.
  bool first_step = false;
};

/// One torch.optim.Adam (decoupled = false) or AdamW (decoupled = true) step.
struct AdamStep {
  double lr = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;
  /// The 1-based step count after this update (bias correction 1 - beta^step).
  std::int64_t step = 1;
};

}  // namespace ruccl
