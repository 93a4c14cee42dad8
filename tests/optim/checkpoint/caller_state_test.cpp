// CallerState: the caller's named values in a TrainingRecord (every type through a file, the
// errors of a wrong or missing key), and a resume in the middle of an accumulation window.
#include <catch2/catch.hpp>

#include <cstring>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/dropout.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "optim/adam.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/training_record.h"
#include "tensor/ops/elementwise.h"
#include "tests/optim/scratch_dir.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::optim::test_support::ScratchDir;
using ruccl::testing::TensorEqual;

namespace {

std::shared_ptr<nn::Sequential> make_model(std::uint64_t seed) {
  Generator gen(seed);
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 6, gen), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Dropout>(0.25, 3), std::make_shared<nn::Linear>(6, 2, gen)});
}

}  // namespace

TEST_CASE("named caller values of every type survive a record file", "[optim]") {
  ScratchDir dir;
  Generator noise(7);
  (void)noise.next_below(10);  // somewhere inside its stream
  (void)Tensor::randn({3}, noise);
  const Tensor ema = Tensor::randn({3, 2}, noise, DType::F64).transpose(0, 1);  // strided
  const std::string bytes("a\0b\xff", 4);
  CallerState caller{.step = 4, .data_position = 12};
  caller.set("epoch", 3);
  caller.set("tokens", std::uint64_t{1} << 40);
  caller.set("best_loss", 0.125);
  caller.set("run", "baseline");
  caller.set("blob", bytes);
  caller.set("ema", ema);
  caller.set("noise_rng", noise.state());
  caller.set("replaced", 1.5);
  caller.set("replaced", 2);  // another type under the same name replaces the value
  TrainingRecord::capture(*make_model(1), nullptr, nullptr, nullptr, caller)
      .save(dir / "rank0.ckpt");

  const TrainingRecord record = TrainingRecord::load(dir / "rank0.ckpt");
  const CallerState& got = record.caller();
  CHECK(got.step == 4);
  CHECK(got.data_position == 12);
  CHECK(got.get<std::int64_t>("epoch") == 3);
  CHECK(got.get<int>("epoch") == 3);
  CHECK(got.get<std::uint64_t>("tokens") == std::uint64_t{1} << 40);
  CHECK(got.get<double>("best_loss") == 0.125);
  CHECK(got.get<std::string>("run") == "baseline");
  CHECK(got.get<std::string>("blob") == bytes);
  const Tensor ema_back = got.get<Tensor>("ema");
  CHECK(ema_back.dtype() == DType::F64);
  REQUIRE_THAT(ema_back, TensorEqual(ema));
  Generator resumed(0);
  resumed.set_state(got.get<Generator::State>("noise_rng"));
  CHECK(resumed.next_u64() == noise.next_u64());
  CHECK(got.get<std::int64_t>("replaced") == 2);
  CHECK(got.contains("ema"));
  CHECK_FALSE(got.contains("momentum"));
  CHECK(got.values.size() == 8);
}

TEST_CASE("a caller value asked for by a wrong name or type names the key and both types",
          "[optim]") {
  CallerState caller;
  CHECK_THROWS_WITH(caller.get<std::int64_t>("epoch"),
                    "CallerState::get<int64>: no value named 'epoch' (the record holds no named "
                    "values)");
  caller.set("epoch", 3);
  caller.set("ema", Tensor::zeros({2}));
  CHECK_THROWS_AS(caller.get<std::int64_t>("epok"), ValueError);
  CHECK_THROWS_WITH(caller.get<std::int64_t>("epok"),
                    "CallerState::get<int64>: no value named 'epok' (the record holds 'ema', "
                    "'epoch')");
  CHECK_THROWS_WITH(caller.get<double>("epoch"),
                    "CallerState::get<double>: 'epoch' holds type int64, not double");
  CHECK_THROWS_WITH(caller.get<Generator::State>("ema"),
                    "CallerState::get<generator state>: 'ema' holds type tensor, not generator "
                    "state");
  caller.set("big", 300);
  CHECK_THROWS_WITH(caller.get<std::int8_t>("big"),
                    Catch::Contains("'big' holds 300, which does not fit"));
  CHECK_THROWS_AS(caller.set("huge", ~std::uint64_t{0}), ValueError);
  CHECK_THROWS_AS(caller.set("", 1), ValueError);
  CHECK_THROWS_AS(caller.set("undefined", Tensor()), ValueError);
  // A tensor is copied when set: later changes to it are not what gets recorded.
  Tensor live = Tensor::ones({2});
  caller.set("live", live);
  live.fill_(5.0);
  REQUIRE_THAT(caller.get<Tensor>("live"), TensorEqual(Tensor::ones({2})));
}

TEST_CASE("a CRC-valid record whose caller value has an unknown type tag is refused", "[optim]") {
  CallerState caller;
  caller.set("zz_tagged", 12345);
  const std::string payload =
      TrainingRecord::capture(*make_model(1), nullptr, nullptr, nullptr, caller)
          .serialize_payload();
  std::string damaged = payload;
  const std::size_t at = damaged.find("zz_tagged");
  REQUIRE(at != std::string::npos);
  damaged[at + 9] = 9;  // the type tag follows the name
  CHECK_THROWS_AS(TrainingRecord::parse_payload(damaged, "memory"), CheckpointError);
  CHECK_THROWS_WITH(TrainingRecord::parse_payload(damaged, "memory"),
                    Catch::Contains("checkpoint memory") &&
                        Catch::Contains("the caller value 'zz_tagged': expected a type tag "
                                        "below 5, got 9"));
  damaged[at + 9] = 1;  // a double: the same 8 bytes, read as another type, still parse
  CHECK_THROWS_WITH(TrainingRecord::parse_payload(damaged, "memory").caller().get<int>("zz_tagged"),
                    Catch::Contains("holds type double, not int64"));
}

namespace {

/// A run with 3 micro-batches per step, whose inputs get noise from a generator of its own (not
/// the data generator): its position and the micro-batch count within the step are named caller
/// values; the accumulator, optimizer and Dropout's generator come back through the record.
struct AccumulatingRun {
  std::shared_ptr<nn::Sequential> model;
  AdamW optimizer{{.weight_decay = 0.05}};
  GradientsAccumulator accumulator;
  Generator data{99};
  Generator noise{1234};
  std::int64_t micro = 0;
  std::int64_t steps = 0;

  explicit AccumulatingRun(std::uint64_t seed) : model(make_model(seed)) {}

  void train(int micro_batches) {
    for (int i = 0; i < micro_batches; ++i) {
      const Tensor x = add(Tensor::randn({3, 4}, data), mul(Tensor::randn({3, 4}, noise), 0.1));
      const Tensor y = Tensor::randn({3, 2}, data);
      model->zero_grad();
      nn::mse_loss(model->forward(Var(x)), Var(y)).backward();
      accumulator.accumulate(GradientsParams::from_module(*model), 3, LossReduction::Mean);
      if (++micro % 3 == 0) {
        optimizer.step(0.01, *model, accumulator.mean());
        ++steps;
      }
    }
  }
  TrainingRecord capture() const {
    CallerState caller{.step = steps, .data_position = micro, .rng = data.state()};
    caller.set("noise_rng", noise.state());
    caller.set("micro_in_step", accumulator.micro_batches());
    return TrainingRecord::capture(*model, &optimizer, nullptr, &accumulator, caller);
  }
  void restore(const TrainingRecord& record) {
    record.restore(*model, &optimizer, nullptr, &accumulator);
    const CallerState& c = record.caller();
    steps = c.step;
    micro = c.data_position;
    data.set_state(c.rng);
    noise.set_state(c.get<Generator::State>("noise_rng"));
    REQUIRE(c.get<std::int64_t>("micro_in_step") == accumulator.micro_batches());
  }
};

}  // namespace

TEST_CASE("a run saved in the middle of an accumulation window resumes bit for bit", "[optim]") {
  ScratchDir dir;
  AccumulatingRun straight(1);
  straight.train(13);
  for (int saved_after : {4, 5}) {  // 1 and 2 micro-batches into the second step
    INFO("saved after " << saved_after << " micro-batches");
    {
      AccumulatingRun first(1);
      first.train(saved_after);
      REQUIRE_FALSE(first.accumulator.empty());
      first.capture().save(dir / "rank0.ckpt");
    }
    AccumulatingRun resumed(777);  // other weights, generators at their seeds
    resumed.restore(TrainingRecord::load(dir / "rank0.ckpt"));
    CHECK(resumed.accumulator.micro_batches() == saved_after - 3);
    resumed.train(13 - saved_after);
    CHECK(resumed.steps == straight.steps);
    const auto a = straight.model->parameters();
    const auto b = resumed.model->parameters();
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("parameter " << i);
      REQUIRE_THAT(b[i].value(), TensorEqual(a[i].value()));
    }
    CHECK(resumed.noise.state() == straight.noise.state());
  }
}
