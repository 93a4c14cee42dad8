#pragma once
// Batch normalisation, as torch.nn.BatchNorm1d / BatchNorm2d: normalise each channel (dim 1) of
// an [N, C, ...] input by the statistics of the batch in training mode, and by the running
// statistics (buffers) in evaluation mode. SyncBatchNorm (sync_batch_norm.h) takes the batch
// statistics over every rank of a Communicator.
#include <cstdint>
#include <optional>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// Options of the batch norms (every member has a default: `{.momentum = 0.01}` keeps the rest).
struct BatchNormOptions {
  /// Added to the variance inside the square root.
  double eps = 1e-5;
  /// Weight of the new batch statistic in the running update, running = (1 - momentum) * running
  /// + momentum * batch; std::nullopt: a cumulative average (momentum 1 / num_batches_tracked).
  std::optional<double> momentum = 0.1;
  /// Whether to learn a per-channel "weight" (ones) and "bias" (zeros).
  bool affine = true;
  /// Whether to keep the buffers "running_mean" (zeros), "running_var" (ones) and
  /// "num_batches_tracked" (I64 0-d) and normalise by them in evaluation mode; without them the
  /// batch statistics are used in both modes.
  bool track_running_stats = true;
  /// The parameters' and running statistics' dtype (floating).
  DType dtype = DType::F32;
};

/// A channel's batch statistics: mean and population variance, each [1, C, 1, ...] (broadcasting
/// against the input), and how many values each channel had.
struct BatchStatistics {
  Var mean;
  Var var;
  std::int64_t count = 0;
};

/// The shared part of BatchNorm1d, BatchNorm2d and SyncBatchNorm (torch's _BatchNorm): the
/// parameters and buffers, the running update and the normalisation. In training mode (or without
/// running statistics) y = (x - mean) / sqrt(var + eps) * weight + bias with the batch's mean and
/// population variance, and the running statistics take the batch's mean and unbiased variance
/// (var * n / (n - 1)), as PyTorch. In evaluation mode the running statistics replace the batch's.
/// BatchNorm1d / 2d run the fused autodiff::batch_norm (autodiff/ops/batch_norm.h) where the
/// backend has its kernels; SyncBatchNorm's batch statistics (and a backend without the kernels)
/// take the composite of mean, sub, mul, sqrt and div, whose gradient comes from the tape.
class BatchNormBase : public Module {
 public:
  std::int64_t num_features() const { return num_features_; }
  const BatchNormOptions& options() const { return options_; }
  /// ValueError without affine.
  Param& weight();
  Param& bias();
  /// The running statistics (ValueError without track_running_stats); they share storage with
  /// the buffers, which each training step updates in place.
  Tensor running_mean() const;
  Tensor running_var() const;
  /// How many training steps updated the running statistics (I64, 0-d).
  Tensor num_batches_tracked() const;

 protected:
  /// `name` is the layer's type for errors made before it is registered ("BatchNorm1d").
  BatchNormBase(std::int64_t num_features, BatchNormOptions options, const char* name);
  BatchNormBase(const BatchNormBase&) = default;

  /// Normalises `x` ([N, C, ...], already checked by the layer for its dims and C).
  Var normalize(const Var& x);
  /// The batch statistics of `x` over every dim but 1. SyncBatchNorm takes them over every rank.
  virtual BatchStatistics batch_statistics(const Var& x);
  /// Whether batch_statistics is this rank's alone (then the fused op computes it);
  /// SyncBatchNorm says false.
  virtual bool local_statistics() const { return true; }
  /// ShapeError unless `x` has C channels in dim 1 and a dim in [min_dim, max_dim];
  /// `expected` describes the shapes accepted ("[N, 3] or [N, 3, L]"). DTypeError unless x has
  /// the parameters' floating dtype.
  void check_input(const Var& x, std::int64_t min_dim, std::int64_t max_dim,
                   const std::string& expected) const;

 private:
  /// Adds 1 to num_batches_tracked; returns the running update's momentum.
  double count_batch();

  std::int64_t num_features_;
  BatchNormOptions options_;
  std::size_t weight_ = 0, bias_ = 0;
  std::size_t running_mean_ = 0, running_var_ = 0, num_batches_ = 0;
};

/// Batch normalisation of [N, C] or [N, C, L] inputs (torch.nn.BatchNorm1d).
///
///   nn::BatchNorm1d bn(8);          // weight, bias; running_mean, running_var buffers
///   Var y = bn(x);                  // x [N, 8] or [N, 8, L]; training mode: batch statistics
///   bn.eval();                      // now the running statistics
class BatchNorm1d : public Cloneable<BatchNorm1d, BatchNormBase> {
 public:
  explicit BatchNorm1d(std::int64_t num_features, BatchNormOptions options = {});
  Var forward(const Var& x) override;
};

/// Batch normalisation of [N, C, H, W] inputs (torch.nn.BatchNorm2d).
class BatchNorm2d : public Cloneable<BatchNorm2d, BatchNormBase> {
 public:
  explicit BatchNorm2d(std::int64_t num_features, BatchNormOptions options = {});
  Var forward(const Var& x) override;
};

}  // namespace ruccl::nn
