#include "optim/clip_grad_norm.h"

#include <cmath>

#include "tensor/core/error.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::optim {

double grad_norm_squared(const GradientsParams& grads) {
  double total = 0.0;
  for (const auto& [id, g] : grads.entries()) {
    if (g.numel() == 0) continue;
    const Tensor g64 = g.to(DType::F64);
    total += (g64 * g64).sum().to(Device::cpu()).item<double>();
  }
  return total;
}

void scale_to_max_norm_(GradientsParams& grads, double max_norm, double total_norm) {
  RUCCL_CHECK(max_norm >= 0.0, ValueError, "clip_grad_norm_: expected max_norm >= 0, got ",
              max_norm);
  constexpr double kEps = 1e-6;  // PyTorch's: a zero total norm gives a finite coefficient
  const double coefficient = max_norm / (total_norm + kEps);
  if (!(coefficient < 1.0) && !std::isnan(coefficient)) return;
  for (const auto& [id, g] : grads.entries()) {
    Tensor shared = g;  // a handle to the same storage: mul_ writes the gradient in place
    shared.mul_(coefficient);
  }
}

double clip_grad_norm_(GradientsParams& grads, double max_norm) {
  const double norm = std::sqrt(grad_norm_squared(grads));
  scale_to_max_norm_(grads, max_norm, norm);
  return norm;
}

double clip_grad_norm_(GradientsParams& grads, double max_norm, Communicator& comm) {
  const Tensor local = Tensor::full({1}, grad_norm_squared(grads), DType::F64, comm.device());
  const double total =
      comm.all_reduce(local, ReduceOperation::Sum, CallOptions().with_label("clip_grad_norm_"))
          .to(Device::cpu())
          .item<double>();
  const double norm = std::sqrt(total);
  scale_to_max_norm_(grads, max_norm, norm);
  return norm;
}

}  // namespace ruccl::optim
