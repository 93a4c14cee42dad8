// The data-parallel classifier trainer (optim/classifier_trainer.h) on a tiny synthetic dataset:
// the loss curve does not depend on the number of ranks (same global batch), and resuming from its
// epoch or step checkpoints reproduces the uninterrupted run bit for bit.
#include <catch2/catch.hpp>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/sequential.h"
#include "optim/classifier_trainer.h"
#include "tests/optim/scratch_dir.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
namespace optim = ruccl::optim;
using ruccl::optim::test_support::ScratchDir;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

/// `count` images of 12 pixels in 4 classes: the class decides which pixels are bright.
optim::LabelledImages synthetic(std::int64_t count, std::uint64_t seed) {
  optim::LabelledImages d;
  d.count = count;
  d.features = 12;
  d.classes = 4;
  Generator gen(seed);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto label = static_cast<std::uint8_t>(gen.next_below(4));
    d.labels.push_back(label);
    for (std::int64_t f = 0; f < d.features; ++f) {
      const bool bright = f % 4 == label;
      d.pixels.push_back(static_cast<std::uint8_t>(gen.next_below(100) + (bright ? 150 : 0)));
    }
  }
  return d;
}

/// A 12-16-4 MLP, the same on every call (seed 3), ParamIds 1..4.
std::shared_ptr<nn::Module> tiny_mlp() {
  Generator gen(3);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(12, 16, gen));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(16, 4, gen));
  model->assign_param_ids(1);
  return model;
}

optim::TrainResult train_tiny(const optim::LabelledImages& train, const optim::LabelledImages& test,
                              const optim::TrainOptions& options,
                              optim::TrainObserver* observer = nullptr) {
  return optim::train_classifier(train, test, tiny_mlp, options, observer);
}

optim::TrainOptions tiny_options(int ranks) {
  optim::TrainOptions o;
  o.ranks = ranks;
  o.epochs = 2;
  o.batch = 20;  // 90 samples: 4 full batches and one of 10 per epoch
  o.lr = 0.01;
  o.seed = 3;
  o.threads_per_rank = 1;
  o.record_step_losses = true;
  return o;
}

}  // namespace

TEST_CASE("the data-parallel trainer gives the same loss curve on 1, 2 and 3 ranks", "[optim]") {
  const optim::LabelledImages train = synthetic(90, 1);
  const optim::LabelledImages test = synthetic(40, 2);
  const optim::TrainResult one = train_tiny(train, test, tiny_options(1));
  REQUIRE(one.step_losses.size() == 10);
  CHECK(one.step_losses.back() < one.step_losses.front());  // it learns
  REQUIRE(one.epochs.size() == 2);
  CHECK(one.epochs.back().test_accuracy > 0.5);
  for (int ranks : {2, 3}) {
    INFO(ranks << " ranks");
    const optim::TrainResult many = train_tiny(train, test, tiny_options(ranks));
    REQUIRE(many.step_losses.size() == one.step_losses.size());
    // Float-summation noise only: the ranks' partial sums add in another order (F32, 12-16
    // terms per batch row, 10 steps of Adam).
    for (std::size_t s = 0; s < one.step_losses.size(); ++s) {
      INFO("step " << s);
      CHECK(many.step_losses[s] == Approx(one.step_losses[s]).epsilon(1e-5));
    }
    for (std::size_t i = 0; i < one.parameters.size(); ++i) {
      REQUIRE_THAT(many.parameters[i], TensorNear(one.parameters[i], 1e-4, 1e-5));
    }
    CHECK(many.epochs.back().test_accuracy == Approx(one.epochs.back().test_accuracy));
  }
}

TEST_CASE(
    "the trainer resumed from its epoch checkpoints matches the uninterrupted run "
    "bit for bit",
    "[optim]") {
  const optim::LabelledImages train = synthetic(90, 1);
  const optim::LabelledImages test = synthetic(40, 2);
  ScratchDir dir;
  optim::TrainOptions o = tiny_options(2);
  o.epochs = 3;
  const optim::TrainResult straight = train_tiny(train, test, o);

  o.checkpoint_dir = dir / "ckpt";
  o.epochs = 1;
  train_tiny(train, test, o);
  o.epochs = 3;
  o.resume = true;
  const optim::TrainResult resumed = train_tiny(train, test, o);
  REQUIRE(resumed.epochs.size() == 2);
  CHECK(resumed.epochs.front().epoch == 2);
  for (std::size_t i = 0; i < straight.parameters.size(); ++i) {
    REQUIRE_THAT(resumed.parameters[i], TensorEqual(straight.parameters[i]));
  }
  // Another rank count is refused on every rank, with the reason.
  o.ranks = 3;
  CHECK_THROWS_WITH(train_tiny(train, test, o), Catch::Contains("resume with 2 ranks"));
}

namespace {

/// Copies the checkpoint folder once, when rank 0 reports `at_step` (the step's checkpoint is
/// agreed by then): what a job killed right after that step would leave.
class SnapshotAt : public optim::TrainObserver {
 public:
  SnapshotAt(std::int64_t at_step, std::filesystem::path from, std::filesystem::path to)
      : at_(at_step), from_(std::move(from)), to_(std::move(to)) {}
  void on_progress(const optim::ProgressReport&) override {
    if (++steps_ == at_) std::filesystem::copy(from_, to_);
  }
  int resumed_steps = -1;
  void on_resume(int, std::int64_t steps, std::int64_t) override {
    resumed_steps = static_cast<int>(steps);
  }

 private:
  std::int64_t at_, steps_ = 0;
  std::filesystem::path from_, to_;
};

}  // namespace

TEST_CASE(
    "the trainer resumed mid-epoch from a step checkpoint matches the uninterrupted run "
    "bit for bit",
    "[optim]") {
  const optim::LabelledImages train = synthetic(90, 1);
  const optim::LabelledImages test = synthetic(40, 2);
  ScratchDir dir;
  optim::TrainOptions o = tiny_options(2);  // 5 batches per epoch, a step report after each
  o.epochs = 3;
  o.checkpoint_dir = dir / "ckpt";
  o.checkpoint_every = 3;
  SnapshotAt snapshot(7, dir / "ckpt", dir / "at7");  // steps 3, 5 (epoch end), 6: the newest is 6
  const optim::TrainResult straight = train_tiny(train, test, o, &snapshot);
  REQUIRE(std::filesystem::exists(dir / "at7" / "rank1-step6.ckpt"));
  CHECK_FALSE(std::filesystem::exists(dir / "at7" / "rank0-step5.ckpt"));  // pruned after 6

  o.checkpoint_dir = dir / "at7";
  o.resume = true;
  SnapshotAt observer(-1, {}, {});
  const optim::TrainResult resumed = train_tiny(train, test, o, &observer);
  CHECK(observer.resumed_steps == 6);  // epoch 2, batch 2 of 5
  REQUIRE(resumed.epochs.size() == 2);
  CHECK(resumed.epochs.front().epoch == 2);
  CHECK(resumed.epochs.back().steps == 15);
  for (std::size_t i = 0; i < straight.parameters.size(); ++i) {
    REQUIRE_THAT(resumed.parameters[i], TensorEqual(straight.parameters[i]));
  }
}

TEST_CASE(
    "the trainer under --zero checkpoints the optimizer shards and resumes bit for bit, as ZeRO "
    "or plain",
    "[optim][zero]") {
  const optim::LabelledImages train = synthetic(90, 1);
  const optim::LabelledImages test = synthetic(40, 2);
  ScratchDir dir;
  optim::TrainOptions o = tiny_options(2);  // 5 batches per epoch
  o.zero_stage = 2;
  o.epochs = 4;
  const optim::TrainResult straight = train_tiny(train, test, o);
  o.epochs = 3;
  o.checkpoint_dir = dir / "ckpt";
  o.checkpoint_every = 3;
  train_tiny(train, test, o);
  CHECK(std::filesystem::exists(dir / "ckpt" / "zero-step15" / "manifest.shards"));
  CHECK_FALSE(std::filesystem::exists(dir / "ckpt" / "zero-step12"));  // pruned after 15
  o.epochs = 4;
  o.resume = true;
  for (int zero : {2, 0}) {
    INFO("resumed with zero_stage " << zero);
    std::filesystem::remove_all(dir / "again");
    std::filesystem::copy(dir / "ckpt", dir / "again", std::filesystem::copy_options::recursive);
    o.checkpoint_dir = dir / "again";
    o.zero_stage = zero;
    const optim::TrainResult resumed = train_tiny(train, test, o);
    REQUIRE(resumed.epochs.size() == 1);
    for (std::size_t i = 0; i < straight.parameters.size(); ++i) {
      REQUIRE_THAT(resumed.parameters[i], TensorEqual(straight.parameters[i]));
    }
  }
}

TEST_CASE("cosine_lr anneals the learning rate over all the epochs' steps", "[optim]") {
  const optim::LabelledImages train = synthetic(90, 1);
  const optim::LabelledImages test = synthetic(40, 2);
  const optim::TrainResult constant = train_tiny(train, test, tiny_options(1));
  optim::TrainOptions options = tiny_options(1);
  options.cosine_lr = true;
  const optim::TrainResult cosine = train_tiny(train, test, options);
  REQUIRE(cosine.step_losses.size() == 10);
  // Step 0 is measured before any update, step 1 after one at lr_at(0) = lr: both as the
  // constant run's; from step 2 on the rate is below lr (cos(pi / 10) < 1), so the runs part.
  CHECK(cosine.step_losses[0] == constant.step_losses[0]);
  CHECK(cosine.step_losses[1] == constant.step_losses[1]);
  CHECK(cosine.step_losses[2] != constant.step_losses[2]);
  CHECK(cosine.step_losses.back() < cosine.step_losses.front());  // it still learns
}
