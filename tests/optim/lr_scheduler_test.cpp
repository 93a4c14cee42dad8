#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include "optim/checkpoint/checkpoint_error.h"
#include "optim/lr_scheduler.h"
#include "tests/optim/golden_data.h"

using namespace ruccl;
using namespace ruccl::optim;

namespace {

// torch's schedulers compute recursively (chainable form) in double; our closed forms agree to a
// few ulps, so 1e-12 relative is a tight bound that still allows the different operation order.
constexpr double kRelTol = 1e-12;

std::vector<double> golden_lrs(const std::string& key) {
  for (const auto& line : test_support::read_golden("optim_schedulers.txt")) {
    if (line.key == key) return line.numbers();
  }
  FAIL("no golden line " << key);
  return {};
}

void check_schedule(LrScheduler& schedule, const std::vector<double>& expected) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("step " << i);
    CHECK(schedule.current() == Approx(expected[i]).epsilon(kRelTol));
    CHECK(schedule.step() == Approx(expected[i]).epsilon(kRelTol));
  }
  CHECK(schedule.steps() == static_cast<std::int64_t>(expected.size()));
}

}  // namespace

TEST_CASE("schedulers follow torch's StepLR, CosineAnnealingLR and LinearLR", "[optim]") {
  SECTION("constant") {
    ConstantLr schedule(0.1);
    check_schedule(schedule, std::vector<double>(5, 0.1));
  }
  SECTION("step") {
    StepLr schedule(0.1, 3, 0.5);
    check_schedule(schedule, golden_lrs("step_lr_3_0.5"));
  }
  SECTION("cosine annealing") {
    CosineAnnealingLr schedule(0.1, 10, 0.01);
    check_schedule(schedule, golden_lrs("cosine_10_0.01"));
    CHECK(schedule.step() == Approx(0.01));  // stays at eta_min after t_max
  }
  SECTION("linear warm-up") {
    LinearWarmupLr schedule(0.1, 4, 0.25);
    check_schedule(schedule, golden_lrs("linear_0.25_4"));
  }
  SECTION("warm-up then cosine") {
    WarmupCosineLr schedule(0.1, 4, 14, 0.01, 0.25);
    check_schedule(schedule, golden_lrs("warmup_cosine_0.25_4_14_0.01"));
  }
}

TEST_CASE("a scheduler state restores the position and refuses another schedule", "[optim]") {
  WarmupCosineLr original(0.1, 4, 14, 0.01, 0.25);
  for (int i = 0; i < 6; ++i) original.step();
  const SchedulerState saved = original.state();
  CHECK(saved.kind == "warmup_cosine");
  CHECK(saved.steps == 6);

  WarmupCosineLr resumed(0.1, 4, 14, 0.01, 0.25);
  resumed.load_state(saved);
  for (int i = 0; i < 10; ++i) CHECK(resumed.step() == original.step());

  WarmupCosineLr other_config(0.2, 4, 14, 0.01, 0.25);
  CHECK_THROWS_AS(other_config.load_state(saved), CheckpointError);
  CHECK_THROWS_WITH(other_config.load_state(saved),
                    "LrScheduler::load_state: the 'warmup_cosine' scheduler was saved with another "
                    "configuration: expected lr 0.1 (the record's), got 0.2");
  WarmupCosineLr longer(0.1, 4, 20, 0.01, 0.25);
  CHECK_THROWS_WITH(longer.load_state(saved),
                    Catch::EndsWith("expected total_steps 14 (the record's), got 20"));
  StepLr other_kind(0.1, 3);
  CHECK_THROWS_WITH(other_kind.load_state(saved),
                    Catch::Contains("expected a 'step' scheduler state, got 'warmup_cosine'"));
}

TEST_CASE("schedulers refuse invalid configurations", "[optim]") {
  CHECK_THROWS_AS(StepLr(0.1, 0), ValueError);
  CHECK_THROWS_AS(CosineAnnealingLr(0.1, 0), ValueError);
  CHECK_THROWS_AS(LinearWarmupLr(0.1, 4, 0.0), ValueError);
  CHECK_THROWS_AS(WarmupCosineLr(0.1, 10, 10), ValueError);
  CHECK_THROWS_AS(ConstantLr(-1.0), ValueError);
}
