#pragma once
// Learning-rate schedulers. Each is a pure function of the number of optimizer steps taken so far,
// so its whole state is that count (plus its configuration, saved to detect a mismatching resume).
//
//   WarmupCosineLr schedule(1e-3, /*warmup_steps=*/100, /*total_steps=*/1000);
//   for (...) { optimizer.step(schedule.step(), model, grads); }
#include <cstdint>
#include <string>
#include <vector>

namespace ruccl::optim {

/// What a scheduler saves: its kind, its configuration and how many steps it has taken.
struct SchedulerState {
  std::string kind;
  std::vector<double> config;
  std::int64_t steps = 0;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(kind, config, steps);
  }
};

/// Base of every learning-rate schedule.
class LrScheduler {
 public:
  virtual ~LrScheduler() = default;

  /// The learning rate for step number `step` (0-based), without changing the state.
  virtual double lr_at(std::int64_t step) const = 0;
  /// "constant", "step", "cosine", "linear_warmup", "warmup_cosine".
  virtual std::string kind() const = 0;
  /// The constructor arguments, in order (compared on restore).
  virtual std::vector<double> config() const = 0;
  /// The name of each config() value, in the same order (named when a restore refuses them).
  virtual std::vector<std::string> config_names() const = 0;

  /// The learning rate for the current step; then advances to the next step.
  double step() { return lr_at(steps_++); }
  /// The learning rate the next call to step() returns.
  double current() const { return lr_at(steps_); }
  /// How many steps have been taken.
  std::int64_t steps() const { return steps_; }

  /// The state to checkpoint.
  SchedulerState state() const { return {kind(), config(), steps_}; }
  /// Restores a saved state; throws CheckpointError when it was saved by another kind of
  /// scheduler or with another configuration (each value that differs named, with both values).
  void load_state(const SchedulerState& state);

 private:
  std::int64_t steps_ = 0;
};

/// The same rate at every step.
class ConstantLr : public LrScheduler {
 public:
  explicit ConstantLr(double lr);
  double lr_at(std::int64_t step) const override;
  std::string kind() const override { return "constant"; }
  std::vector<double> config() const override { return {lr_}; }
  std::vector<std::string> config_names() const override { return {"lr"}; }

 private:
  double lr_;
};

/// torch.optim.lr_scheduler.StepLR: lr · gamma^floor(step / step_size).
class StepLr : public LrScheduler {
 public:
  StepLr(double lr, std::int64_t step_size, double gamma = 0.1);
  double lr_at(std::int64_t step) const override;
  std::string kind() const override { return "step"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override { return {"lr", "step_size", "gamma"}; }

 private:
  double lr_;
  std::int64_t step_size_;
  double gamma_;
};

/// torch's CosineAnnealingLR in closed form: eta_min + (lr − eta_min)·(1 + cos(π·t/t_max))/2 for
/// t = min(step, t_max) (it stays at eta_min after t_max instead of rising again).
class CosineAnnealingLr : public LrScheduler {
 public:
  CosineAnnealingLr(double lr, std::int64_t t_max, double eta_min = 0.0);
  double lr_at(std::int64_t step) const override;
  std::string kind() const override { return "cosine"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override { return {"lr", "t_max", "eta_min"}; }

 private:
  double lr_;
  std::int64_t t_max_;
  double eta_min_;
};

/// torch's LinearLR used as a warm-up: lr·(f + (1 − f)·min(step, warmup_steps)/warmup_steps), with
/// f = start_factor (torch's default 1/3), then lr from step warmup_steps on.
class LinearWarmupLr : public LrScheduler {
 public:
  LinearWarmupLr(double lr, std::int64_t warmup_steps, double start_factor = 1.0 / 3.0);
  double lr_at(std::int64_t step) const override;
  std::string kind() const override { return "linear_warmup"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override {
    return {"lr", "warmup_steps", "start_factor"};
  }

 private:
  double lr_;
  std::int64_t warmup_steps_;
  double start_factor_;
};

/// LinearWarmupLr for `warmup_steps`, then cosine annealing from lr to eta_min over the remaining
/// total_steps − warmup_steps steps (eta_min afterwards).
class WarmupCosineLr : public LrScheduler {
 public:
  WarmupCosineLr(double lr, std::int64_t warmup_steps, std::int64_t total_steps,
                 double eta_min = 0.0, double start_factor = 1.0 / 3.0);
  double lr_at(std::int64_t step) const override;
  std::string kind() const override { return "warmup_cosine"; }
  std::vector<double> config() const override;
  std::vector<std::string> config_names() const override {
    return {"lr", "warmup_steps", "start_factor", "total_steps", "eta_min"};
  }

 private:
  LinearWarmupLr warmup_;
  CosineAnnealingLr cosine_;
  std::int64_t warmup_steps_;
  std::int64_t total_steps_;
};

}  // namespace ruccl::optim
