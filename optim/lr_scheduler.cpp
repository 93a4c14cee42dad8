#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "optim/checkpoint/checkpoint_error.h"
#include "optim/hyper_parameters.h"

namespace ruccl::optim {

void LrScheduler::load_state(const SchedulerState& state) {
  RUCCL_CHECK(state.kind == kind(), CheckpointError, "LrScheduler::load_state: expected a '",
              kind(), "' scheduler state, got '", state.kind, "'");
  RUCCL_CHECK(state.config == config(), CheckpointError, "LrScheduler::load_state: the '", kind(),
              "' scheduler was saved with another configuration: ",
              hyper_parameter_differences(config_names(), state.config, config()));
  RUCCL_CHECK(state.steps >= 0, CheckpointError,
              "LrScheduler::load_state: expected a step count >= 0, got ", state.steps);
  steps_ = state.steps;
}

ConstantLr::ConstantLr(double lr) : lr_(lr) {
  RUCCL_CHECK(lr >= 0.0, ValueError, "ConstantLr: expected lr >= 0, got ", lr);
}

double ConstantLr::lr_at(std::int64_t) const { return lr_; }

StepLr::StepLr(double lr, std::int64_t step_size, double gamma)
    : lr_(lr), step_size_(step_size), gamma_(gamma) {
  RUCCL_CHECK(lr >= 0.0, ValueError, "StepLr: expected lr >= 0, got ", lr);
  RUCCL_CHECK(step_size > 0, ValueError, "StepLr: expected step_size > 0, got ", step_size);
}

double StepLr::lr_at(std::int64_t step) const {
  return lr_ * std::pow(gamma_, static_cast<double>(step / step_size_));
}

std::vector<double> StepLr::config() const {
  return {lr_, static_cast<double>(step_size_), gamma_};
}

CosineAnnealingLr::CosineAnnealingLr(double lr, std::int64_t t_max, double eta_min)
    : lr_(lr), t_max_(t_max), eta_min_(eta_min) {
  RUCCL_CHECK(lr >= 0.0, ValueError, "CosineAnnealingLr: expected lr >= 0, got ", lr);
  RUCCL_CHECK(t_max > 0, ValueError, "CosineAnnealingLr: expected t_max > 0, got ", t_max);
}

double CosineAnnealingLr::lr_at(std::int64_t step) const {
  const double t = static_cast<double>(std::min(std::max<std::int64_t>(step, 0), t_max_));
  return eta_min_ + (lr_ - eta_min_) *
                        (1.0 + std::cos(std::numbers::pi * t / static_cast<double>(t_max_))) / 2.0;
}

std::vector<double> CosineAnnealingLr::config() const {
  return {lr_, static_cast<double>(t_max_), eta_min_};
}

LinearWarmupLr::LinearWarmupLr(double lr, std::int64_t warmup_steps, double start_factor)
    : lr_(lr), warmup_steps_(warmup_steps), start_factor_(start_factor) {
  RUCCL_CHECK(lr >= 0.0, ValueError, "LinearWarmupLr: expected lr >= 0, got ", lr);
  RUCCL_CHECK(warmup_steps > 0, ValueError, "LinearWarmupLr: expected warmup_steps > 0, got ",
              warmup_steps);
  RUCCL_CHECK(start_factor > 0.0 && start_factor <= 1.0, ValueError,
              "LinearWarmupLr: expected start_factor in (0, 1], got ", start_factor);
}

double LinearWarmupLr::lr_at(std::int64_t step) const {
  const double t = static_cast<double>(std::min(std::max<std::int64_t>(step, 0), warmup_steps_));
  return lr_ * (start_factor_ + (1.0 - start_factor_) * t / static_cast<double>(warmup_steps_));
}

std::vector<double> LinearWarmupLr::config() const {
  return {lr_, static_cast<double>(warmup_steps_), start_factor_};
}

WarmupCosineLr::WarmupCosineLr(double lr, std::int64_t warmup_steps, std::int64_t total_steps,
                               double eta_min, double start_factor)
    : warmup_(lr, warmup_steps, start_factor),
      cosine_(lr, std::max<std::int64_t>(total_steps - warmup_steps, 1), eta_min),
      warmup_steps_(warmup_steps),
      total_steps_(total_steps) {
  RUCCL_CHECK(total_steps > warmup_steps, ValueError,
              "WarmupCosineLr: expected total_steps > warmup_steps (", warmup_steps, "), got ",
              total_steps);
}

double WarmupCosineLr::lr_at(std::int64_t step) const {
  return step < warmup_steps_ ? warmup_.lr_at(step) : cosine_.lr_at(step - warmup_steps_);
}

std::vector<double> WarmupCosineLr::config() const {
  std::vector<double> out = warmup_.config();
  const std::vector<double> cos = cosine_.config();
  out.push_back(static_cast<double>(total_steps_));
  out.push_back(cos[2]);
  return out;
}

}  // namespace ruccl::optim
