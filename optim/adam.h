#pragma once
#include "optim/optimizer.h"
#include "optim/update_kernels.h"

namespace ruccl::optim {

/// Adam exactly as torch.optim.Adam (1.13, amsgrad off): L2 weight decay added to the gradient,
/// bias-corrected moments, eps added after the bias-corrected square root.
///
///   Adam adam({.beta1 = 0.9, .beta2 = 0.999});
class Adam : public Optimizer {
 public:
  /// ValueError for betas outside [0, 1), eps < 0 or weight_decay < 0.
  explicit Adam(AdamOptions options = {});
  std::string kind() const override { return "adam"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override {
    return {"beta1", "beta2", "eps", "weight_decay"};
  }
  const AdamOptions& options() const { return options_; }

 protected:
  std::size_t buffer_count() const override { return 2; }
  void update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) override;

 private:
  AdamOptions options_;
};

/// AdamW exactly as torch.optim.AdamW (1.13): decoupled weight decay (param *= 1 − lr·wd before
/// the Adam update). Its options default to torch's: betas (0.9, 0.999), eps 1e-8, weight decay
/// 1e-2, and naming one keeps the others.
///
///   AdamW adamw;                       // torch's defaults
///   AdamW custom({.weight_decay = 0.05});  // betas and eps stay torch's
class AdamW : public Optimizer {
 public:
  /// ValueError for betas outside [0, 1), eps < 0 or weight_decay < 0.
  explicit AdamW(AdamWOptions options = {});
  std::string kind() const override { return "adamw"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override {
    return {"beta1", "beta2", "eps", "weight_decay"};
  }
  const AdamWOptions& options() const { return options_; }

 protected:
  std::size_t buffer_count() const override { return 2; }
  void update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) override;

 private:
  AdamWOptions options_;
};

}  // namespace ruccl::optim
