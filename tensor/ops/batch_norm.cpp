// Batch normalisation's per-channel passes (tensor/ops/batch_norm.h): checks, then the backend.
#include "tensor/ops/batch_norm.h"

#include <initializer_list>

#include "tensor/backend/backend.h"

namespace ruccl {

namespace {

/// Checks x [N, C, ...] (F32 or F64) and the tensors of its shape and the per-channel ones; `op`
/// names the caller.
void check_args(const char* op, const Tensor& x, std::initializer_list<const Tensor*> like_x,
                std::initializer_list<const Tensor*> per_channel) {
  RUCCL_CHECK(x.defined(), ValueError, op, ": expected a defined input, got an undefined one");
  RUCCL_CHECK(x.dim() >= 2, ShapeError, op, ": expected an input [N, C, ...], got ", x.shape());
  RUCCL_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F64, DTypeError, op,
              ": expected an F32 or F64 input, got ", x.dtype());
  for (const Tensor* t : like_x) {
    RUCCL_CHECK(t->defined() && t->shape() == x.shape(), ShapeError, op,
                ": expected a gradient of the input's shape ", x.shape(), ", got ",
                t->defined() ? t->shape() : Shape{});
  }
  const Shape channels{x.shape()[1]};
  for (const Tensor* t : per_channel) {
    RUCCL_CHECK(t->defined() && t->shape() == channels, ShapeError, op,
                ": expected a per-channel tensor of shape ", channels, ", got ",
                t->defined() ? t->shape() : Shape{});
  }
  for (const auto& list : {like_x, per_channel}) {
    for (const Tensor* t : list) {
      RUCCL_CHECK(t->dtype() == x.dtype(), DTypeError, op, ": expected dtype ", x.dtype(),
                  " (the input's), got ", t->dtype());
      RUCCL_CHECK(t->device() == x.device(), DeviceError, op, ": expected device ", x.device(),
                  " (the input's), got ", t->device());
    }
  }
}

Tensor per_channel_empty(const Tensor& x, const char* op) {
  return Tensor::empty(Shape{x.shape()[1]}, x.dtype(), x.device(), op);
}

}  // namespace

BatchNormStats batch_norm_stats(const Tensor& x) {
  check_args("batch_norm_stats", x, {}, {});
  RUCCL_CHECK(x.numel() > 0, ValueError,
              "batch_norm_stats: expected at least one value per channel, got an input ",
              x.shape());
  BatchNormStats stats{per_channel_empty(x, "batch_norm_stats"),
                       per_channel_empty(x, "batch_norm_stats")};
  backend_for(x.device()).batch_norm_stats(x.contiguous(), stats.mean, stats.var);
  return stats;
}

Tensor batch_norm_elemt(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  check_args("batch_norm_elemt", x, {}, {&scale, &shift});
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), "batch_norm_elemt");
  backend_for(x.device())
      .batch_norm_elemt(x.contiguous(), scale.contiguous(), shift.contiguous(), out);
  return out;
}

BatchNormGradSums batch_norm_backward_reduce(const Tensor& dy, const Tensor& x,
                                             const Tensor& mean) {
  check_args("batch_norm_backward_reduce", x, {&dy}, {&mean});
  BatchNormGradSums sums{per_channel_empty(x, "batch_norm_backward_reduce"),
                         per_channel_empty(x, "batch_norm_backward_reduce")};
  if (x.numel() == 0) {
    sums.sum_dy.fill_(0);
    sums.sum_dy_xmu.fill_(0);
    return sums;
  }
  backend_for(x.device())
      .batch_norm_backward_reduce(dy.contiguous(), x.contiguous(), mean.contiguous(), sums.sum_dy,
                                  sums.sum_dy_xmu);
  return sums;
}

Tensor batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                 const Tensor& mean_dy, const Tensor& proj, const Tensor& scale) {
  check_args("batch_norm_backward_elemt", x, {&dy}, {&mean, &mean_dy, &proj, &scale});
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), "batch_norm_backward_elemt");
  backend_for(x.device())
      .batch_norm_backward_elemt(dy.contiguous(), x.contiguous(), mean.contiguous(),
                                 mean_dy.contiguous(), proj.contiguous(), scale.contiguous(), dx);
  return dx;
}

}  // namespace ruccl
