#include "optim/sgd.h"

namespace ruccl::optim {

Sgd::Sgd(SgdOptions options) : options_(options) {
  RUCCL_CHECK(options.momentum >= 0.0, ValueError, "Sgd: expected momentum >= 0, got ",
              options.momentum);
  RUCCL_CHECK(options.dampening >= 0.0, ValueError, "Sgd: expected dampening >= 0, got ",
              options.dampening);
  RUCCL_CHECK(options.weight_decay >= 0.0, ValueError, "Sgd: expected weight_decay >= 0, got ",
              options.weight_decay);
  RUCCL_CHECK(!options.nesterov || (options.momentum > 0.0 && options.dampening == 0.0), ValueError,
              "Sgd: expected momentum > 0 and dampening 0 with Nesterov, got momentum ",
              options.momentum, " and dampening ", options.dampening);
}

std::vector<double> Sgd::config() const {
  return {options_.momentum, options_.dampening, options_.weight_decay,
          options_.nesterov ? 1.0 : 0.0};
}

void Sgd::update(const Tensor& param, const Tensor& grad, Slot& slot, double lr) {
  sgd_update(param, grad, slot.buffers.empty() ? Tensor() : slot.buffers[0], slot.steps == 0, lr,
             options_);
}

}  // namespace ruccl::optim
