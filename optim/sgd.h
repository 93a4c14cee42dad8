#pragma once
#include "optim/optimizer.h"
#include "optim/update_kernels.h"

namespace ruccl::optim {

/// Stochastic gradient descent exactly as torch.optim.SGD (momentum, dampening, Nesterov,
/// L2 weight decay added to the gradient). The first momentum step sets the buffer to the
/// gradient (no dampening), as torch does.
///
///   Sgd sgd({.momentum = 0.9, .weight_decay = 1e-4});
class Sgd : public Optimizer {
 public:
  /// ValueError for negative momentum/dampening/weight decay, or Nesterov without momentum or
  /// with dampening (torch's rules).
  explicit Sgd(SgdOptions options = {});
  std::string kind() const override { return "sgd"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override {
    return {"momentum", "dampening", "weight_decay", "nesterov"};
  }
  const SgdOptions& options() const { return options_; }

 protected:
  std::size_t buffer_count() const override { return options_.momentum != 0.0 ? 1 : 0; }
  void update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) override;

 private:
  SgdOptions options_;
};

}  // namespace ruccl::optim
