// GradientsAccumulator: weighted micro-batches give the exact mean over the window, alone and
// through DataParallel, whatever the micro-batch sizes and loss reductions.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "autodiff/nn/loss.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/data_parallel.h"
#include "optim/gradients_accumulator.h"
#include "tests/optim/gradients_equal.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::run_group;
using test_support::dyadic_model;
using test_support::require_equal;
using test_support::samples;

namespace {

/// The gradient of samples [first, first + count)'s loss, reduced as `loss`. mse_loss's mean is
/// over elements (2 per sample), so a micro-batch's weight below is 2 * count: what matters is
/// that Mean and Sum count the same terms.
GradientsParams gradient(nn::Linear& model, std::int64_t first, std::int64_t count,
                         LossReduction loss) {
  model.zero_grad();
  auto [x, y] = samples(first, count);
  nn::mse_loss(model.forward(Var(x)), Var(y), loss).backward();
  return GradientsParams::from_module(model);
}

}  // namespace

TEST_CASE("mean losses of equal micro-batches give the global mean, not K times it", "[optim]") {
  // The old trap: two micro-batches of mean losses summed gave 2x the gradient.
  auto model = dyadic_model();
  const GradientsParams whole = gradient(*model, 0, 4, LossReduction::Mean);
  GradientsAccumulator acc;
  acc.accumulate(gradient(*model, 0, 2, LossReduction::Mean), 4, LossReduction::Mean);
  acc.accumulate(gradient(*model, 2, 2, LossReduction::Mean), 4, LossReduction::Mean);
  CHECK(acc.weight() == 8.0);
  CHECK(acc.micro_batches() == 2);
  require_equal(acc.mean(), whole);
  CHECK(acc.empty());
}

TEST_CASE("uneven micro-batches with mixed reductions and a zero-weight one are weighted exactly",
          "[optim]") {
  auto model = dyadic_model();
  const GradientsParams whole = gradient(*model, 0, 8, LossReduction::Mean);
  GradientsAccumulator acc;
  acc.accumulate(gradient(*model, 0, 1, LossReduction::Mean), 2, LossReduction::Mean);
  acc.accumulate(gradient(*model, 1, 3, LossReduction::Sum), 6, LossReduction::Sum);
  acc.accumulate(GradientsParams(), 0, LossReduction::Mean);  // a micro-batch with no samples
  acc.accumulate(gradient(*model, 4, 4, LossReduction::Mean), 8, LossReduction::Mean);
  CHECK(acc.micro_batches() == 4);
  CHECK(acc.weight() == 16.0);
  require_equal(acc.mean(), whole);
}

TEST_CASE("a zero-weight micro-batch's gradient is not part of the mean", "[optim]") {
  auto model = dyadic_model();
  GradientsAccumulator acc;
  acc.accumulate(gradient(*model, 0, 2, LossReduction::Mean), 4, LossReduction::Mean);
  acc.accumulate(gradient(*model, 5, 2, LossReduction::Mean), 0, LossReduction::Mean);
  require_equal(acc.mean(), gradient(*model, 0, 2, LossReduction::Mean));
}

TEST_CASE("accumulate refuses bad weights, shapes and dtypes and changes nothing", "[optim]") {
  GradientsAccumulator acc;
  GradientsParams a;
  a.insert(1, Tensor::from_vector<float>({1.0f, 2.0f}));
  a.insert(2, Tensor::from_vector<float>({0.5f}));
  acc.accumulate(a, 2, LossReduction::Mean);
  CHECK(a.get(1)->to_vector<float>() == std::vector<float>{1.0f, 2.0f});  // input unchanged

  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    INFO("weight " << bad);
    CHECK_THROWS_WITH(acc.accumulate(a, bad, LossReduction::Mean),
                      Catch::Contains("expected a finite weight >= 0"));
  }
  GradientsParams bad_shape;
  bad_shape.insert(1, Tensor::zeros({3}));
  CHECK_THROWS_AS(acc.accumulate(bad_shape, 1, LossReduction::Sum), ShapeError);
  GradientsParams bad_dtype;
  bad_dtype.insert(2, Tensor::zeros({1}, DType::F64));
  CHECK_THROWS_AS(acc.accumulate(bad_dtype, 1, LossReduction::Sum), DTypeError);
  CHECK(acc.micro_batches() == 1);
  CHECK(acc.weight() == 2.0);

  const AccumulatedGradients window = acc.take();
  CHECK(window.weight == 2.0);
  CHECK(window.micro_batches == 1);
  CHECK(window.sum.get(1)->to_vector<float>() == std::vector<float>{2.0f, 4.0f});
  CHECK(acc.empty());
  CHECK_THROWS_WITH(acc.mean(), Catch::Contains("expected a window with a positive weight"));
}

TEST_CASE("an accumulator's pending window saves and loads with its weight", "[optim]") {
  GradientsAccumulator acc;
  GradientsParams a;
  a.insert(7, Tensor::from_vector<double>({0.5, -1.0}));
  acc.accumulate(a, 3, LossReduction::Mean);
  acc.accumulate(GradientsParams(), 0, LossReduction::Mean);
  GradientsAccumulator restored;
  restored.load_state(acc.state());
  CHECK(restored.micro_batches() == 2);
  CHECK(restored.weight() == 3.0);
  require_equal(restored.mean(), acc.mean());

  AccumulatorState negative;
  negative.micro_batches = -1;
  CHECK_THROWS_AS(restored.load_state(negative), CheckpointError);
  AccumulatorState bad_weight;
  bad_weight.weight = -2.0;
  CHECK_THROWS_AS(restored.load_state(bad_weight), CheckpointError);
}

TEST_CASE(
    "accumulation windows of every rank reduce to one replica on the global batch, bit for "
    "bit",
    "[optim]") {
  // Global batch of 8 samples: rank 0 has micro-batches of 1 and 3 (mean, sum losses), rank 1 one
  // of 4 and an empty one, rank 2 none at all.
  auto reference_model = dyadic_model();
  const GradientsParams whole = gradient(*reference_model, 0, 8, LossReduction::Mean);
  auto out = run_group(3, [](Communicator& comm) {
    auto model = dyadic_model();
    DataParallel dp = DataParallel::initialize(comm, *model, 0);
    GradientsAccumulator acc;
    if (comm.rank() == 0) {
      acc.accumulate(gradient(*model, 0, 1, LossReduction::Mean), 2, LossReduction::Mean);
      acc.accumulate(gradient(*model, 1, 3, LossReduction::Sum), 6, LossReduction::Sum);
    } else if (comm.rank() == 1) {
      acc.accumulate(gradient(*model, 4, 4, LossReduction::Mean), 8, LossReduction::Mean);
      acc.accumulate(GradientsParams(), 0, LossReduction::Mean);
    }
    GradientsParams g = dp.reduce(*model, acc.take(), MissingGradientPolicy::Error);
    return std::make_pair(std::move(g), dp.last_total_weight());
  });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(out[r].ok());
    CHECK(out[r].value().second == 16.0);
    require_equal(out[r].value().first, whole);
  }
}
