#include "autodiff/nn/batch_norm.h"

#include <vector>

#include "autodiff/grad_mode.h"
#include "autodiff/ops/batch_norm.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/shape.h"
#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::nn {

namespace {
/// Every dim of an [N, C, ...] input but the channel dim.
std::vector<std::int64_t> reduced_dims(std::int64_t dim) {
  std::vector<std::int64_t> dims{0};
  for (std::int64_t d = 2; d < dim; ++d) dims.push_back(d);
  return dims;
}

/// [1, C, 1, ...] with `dim` dims: a per-channel vector's shape against an [N, C, ...] input.
Shape channel_shape(std::int64_t channels, std::int64_t dim) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(dim), 1);
  sizes[1] = channels;
  return Shape(sizes);
}
}  // namespace

BatchNormBase::BatchNormBase(std::int64_t num_features, BatchNormOptions options, const char* name)
    : num_features_(num_features), options_(options) {
  const DType dtype = options.dtype;
  RUCCL_CHECK(num_features > 0, ValueError, name, ": expected num_features > 0, got ",
              num_features);
  RUCCL_CHECK(is_floating(dtype), DTypeError, name, ": expected a floating dtype, got ", dtype);
  RUCCL_CHECK(options.eps >= 0.0, ValueError, name, ": expected eps >= 0, got ", options.eps);
  RUCCL_CHECK(!options.momentum || (*options.momentum >= 0.0 && *options.momentum <= 1.0),
              ValueError, name, ": expected a momentum in [0, 1] (or none), got ",
              options.momentum.value_or(0.0));
  const Shape shape{num_features};
  if (options.affine) {
    weight_ = register_parameter("weight", Param(Tensor::ones(shape, dtype)));
    bias_ = register_parameter("bias", Param(Tensor::zeros(shape, dtype)));
  }
  if (options.track_running_stats) {
    running_mean_ = register_buffer("running_mean", Tensor::zeros(shape, dtype));
    running_var_ = register_buffer("running_var", Tensor::ones(shape, dtype));
    num_batches_ = register_buffer("num_batches_tracked", Tensor::zeros(Shape{}, DType::I64));
  }
}

Param& BatchNormBase::weight() {
  RUCCL_CHECK(options_.affine, ValueError, describe(), ": weight: built without affine");
  return param_at(weight_);
}

Param& BatchNormBase::bias() {
  RUCCL_CHECK(options_.affine, ValueError, describe(), ": bias: built without affine");
  return param_at(bias_);
}

Tensor BatchNormBase::running_mean() const {
  RUCCL_CHECK(options_.track_running_stats, ValueError, describe(),
              ": running_mean: built without track_running_stats");
  return buffer_at(running_mean_);
}

Tensor BatchNormBase::running_var() const {
  RUCCL_CHECK(options_.track_running_stats, ValueError, describe(),
              ": running_var: built without track_running_stats");
  return buffer_at(running_var_);
}

Tensor BatchNormBase::num_batches_tracked() const {
  RUCCL_CHECK(options_.track_running_stats, ValueError, describe(),
              ": num_batches_tracked: built without track_running_stats");
  return buffer_at(num_batches_);
}

void BatchNormBase::check_input(const Var& x, std::int64_t min_dim, std::int64_t max_dim,
                                const std::string& expected) const {
  RUCCL_CHECK(x.dim() >= min_dim && x.dim() <= max_dim && x.shape()[1] == num_features_, ShapeError,
              describe(), ": expected an input ", expected, ", got ", x.shape());
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError, describe(), ": expected a floating input, got ",
              x.dtype());
  // The layer's dtype is its state's (to(DType) converts it), when it has any.
  const Tensor* state = options_.affine                ? &param_at(weight_).value()
                        : options_.track_running_stats ? &buffer_at(running_mean_)
                                                       : nullptr;
  RUCCL_CHECK(state == nullptr || x.dtype() == state->dtype(), DTypeError, describe(),
              ": expected an input of dtype ", state->dtype(), " (the layer's), got ", x.dtype());
}

BatchStatistics BatchNormBase::batch_statistics(const Var& x) {
  const std::vector<std::int64_t> dims = reduced_dims(x.dim());
  Var mean = autodiff::mean(x, dims, /*keepdim=*/true);
  Var centered = autodiff::sub(x, mean);
  Var var = autodiff::mean(autodiff::mul(centered, centered), dims, /*keepdim=*/true);
  return {mean, var, x.numel() / num_features_};
}

double BatchNormBase::count_batch() {
  autodiff::NoGradGuard no_grad;
  Tensor& batches = buffer_at(num_batches_);
  batches.add_(1);
  return options_.momentum ? *options_.momentum : 1.0 / batches.item<double>();
}

Var BatchNormBase::normalize(const Var& x) {
  const bool batch_stats = is_training() || !options_.track_running_stats;
  if ((!batch_stats || local_statistics()) &&
      backend_for(x.value().device()).supports(Op::BatchNorm, x.dtype())) {
    // One fused op (autodiff/ops/batch_norm.h): two passes forward, two backward.
    const std::int64_t count = x.numel() / num_features_;
    RUCCL_CHECK(!is_training() || count > 1, ValueError, describe(),
                ": expected more than 1 value per channel in training mode, got ", count,
                " (input ", x.shape(), ")");
    const bool update = is_training() && options_.track_running_stats;
    const double momentum = update ? count_batch() : 0.0;
    const bool use_running = update || !batch_stats;
    return autodiff::batch_norm(x, use_running ? buffer_at(running_mean_) : Tensor(),
                                use_running ? buffer_at(running_var_) : Tensor(),
                                options_.affine ? param_at(weight_).var() : autodiff::Var(),
                                options_.affine ? param_at(bias_).var() : autodiff::Var(),
                                batch_stats, momentum, options_.eps);
  }
  // The composite (SyncBatchNorm's batch statistics, or a backend without the fused kernels).
  const Shape per_channel = channel_shape(num_features_, x.dim());
  Var mean;
  Var var;
  if (batch_stats) {
    const BatchStatistics stats = batch_statistics(x);
    const bool update = is_training() && options_.track_running_stats;
    RUCCL_CHECK(!is_training() || stats.count > 1, ValueError, describe(),
                ": expected more than 1 value per channel in training mode, got ", stats.count,
                " (input ", x.shape(), ")");
    if (update) {
      const double momentum = count_batch();
      autodiff::NoGradGuard no_grad;
      const auto n = static_cast<double>(stats.count);
      const Shape flat{num_features_};
      const Tensor batch_mean = stats.mean.value().reshape(flat);
      const Tensor batch_var = ruccl::mul(stats.var.value().reshape(flat), n / (n - 1.0));
      Tensor& rm = buffer_at(running_mean_);
      Tensor& rv = buffer_at(running_var_);
      rm.copy_(ruccl::add(ruccl::mul(rm, 1.0 - momentum), ruccl::mul(batch_mean, momentum)));
      rv.copy_(ruccl::add(ruccl::mul(rv, 1.0 - momentum), ruccl::mul(batch_var, momentum)));
    }
    mean = stats.mean;
    var = stats.var;
  } else {
    mean = Var(buffer_at(running_mean_).reshape(per_channel));
    var = Var(buffer_at(running_var_).reshape(per_channel));
  }
  using namespace autodiff;
  Var y = div(sub(x, mean), sqrt(add(var, options_.eps)));
  if (options_.affine) {
    y = add(mul(y, reshape(param_at(weight_).var(), per_channel)),
            reshape(param_at(bias_).var(), per_channel));
  }
  return y;
}

BatchNorm1d::BatchNorm1d(std::int64_t num_features, BatchNormOptions options)
    : Cloneable(num_features, options, "BatchNorm1d") {}

Var BatchNorm1d::forward(const Var& x) {
  check_input(x, 2, 3, str("[N, ", num_features(), "] or [N, ", num_features(), ", L]"));
  return normalize(x);
}

BatchNorm2d::BatchNorm2d(std::int64_t num_features, BatchNormOptions options)
    : Cloneable(num_features, options, "BatchNorm2d") {}

Var BatchNorm2d::forward(const Var& x) {
  check_input(x, 4, 4, str("[N, ", num_features(), ", H, W]"));
  return normalize(x);
}

}  // namespace ruccl::nn
