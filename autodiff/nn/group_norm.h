#pragma once
#include <cstdint>

#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// Options of GroupNorm (every member has a default).
struct GroupNormOptions {
  /// Added to the variance inside the square root.
  double eps = 1e-5;
  /// Whether to learn a per-channel "weight" (ones) and "bias" (zeros).
  bool affine = true;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// Group normalisation (torch.nn.GroupNorm): the C channels of an [N, C, ...] input are split
/// into num_groups groups of C / num_groups consecutive channels, and each sample's group is
/// normalised by its own mean and population variance (+ eps inside the square root); then each
/// channel is scaled by "weight" and shifted by "bias" when affine. No running statistics: the
/// same in training and evaluation mode. A composite of reshape, mean, sub, mul, sqrt and div.
///
///   nn::GroupNorm gn(2, 6);         // 2 groups of 3 channels
///   Var y = gn(x);                  // x [N, 6, ...]
class GroupNorm : public Cloneable<GroupNorm> {
 public:
  /// ValueError unless num_groups > 0 divides num_channels.
  GroupNorm(std::int64_t num_groups, std::int64_t num_channels, GroupNormOptions options = {});
  Var forward(const Var& x) override;
  std::int64_t num_groups() const { return groups_; }
  std::int64_t num_channels() const { return channels_; }
  /// ValueError without affine.
  Param& weight();
  Param& bias();

 private:
  std::int64_t groups_;
  std::int64_t channels_;
  GroupNormOptions options_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

}  // namespace ruccl::nn
