#include "optim/adam.h"

namespace ruccl::optim {
namespace {

void check_options(const char* name, const AdamOptions& o) {
  RUCCL_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0, ValueError, name, ": expected beta1 in [0, 1), got ",
              o.beta1);
  RUCCL_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0, ValueError, name, ": expected beta2 in [0, 1), got ",
              o.beta2);
  RUCCL_CHECK(o.eps >= 0.0, ValueError, name, ": expected eps >= 0, got ", o.eps);
  RUCCL_CHECK(o.weight_decay >= 0.0, ValueError, name, ": expected weight_decay >= 0, got ",
              o.weight_decay);
}

std::vector<double> config_of(const AdamOptions& o) {
  return {o.beta1, o.beta2, o.eps, o.weight_decay};
}

/// The same numbers, for the kernel and the checks (which read weight_decay as decoupled when
/// told so).
AdamOptions as_adam(const AdamWOptions& o) { return {o.beta1, o.beta2, o.eps, o.weight_decay}; }

}  // namespace

Adam::Adam(AdamOptions options) : options_(options) { check_options("Adam", options); }

std::vector<double> Adam::config() const { return config_of(options_); }

void Adam::update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) {
  adam_update(param, grad, slot.buffers[0], slot.buffers[1], slot.steps + 1, lr, options_,
              /*decoupled=*/false);
}

AdamW::AdamW(AdamWOptions options) : options_(options) { check_options("AdamW", as_adam(options)); }

std::vector<double> AdamW::config() const { return config_of(as_adam(options_)); }

void AdamW::update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) {
  adam_update(param, grad, slot.buffers[0], slot.buffers[1], slot.steps + 1, lr, as_adam(options_),
              /*decoupled=*/true);
}

}  // namespace ruccl::optim
