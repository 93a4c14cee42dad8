// DataParallel::no_sync (PyTorch DDP's `with ddp.no_sync():`): micro-batches that communicate
// nothing, folded with their weights into a window the DataParallel holds and reduced once by the
// next backward, in both modes: equal to one replica on the whole global batch, unused parameters
// judged over the whole window, the window checkpointed mid-way.
#include <catch2/catch.hpp>

#include "autodiff/nn/loss.h"
#include "optim/checkpoint/training_record.h"
#include "optim/data_parallel.h"
#include "tests/optim/gradients_equal.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::error_kind;
using ruccl::testing::run_group;
using ruccl::testing::TensorEqual;
using test_support::branchy_loss;
using test_support::branchy_model;
using test_support::dyadic_model;
using test_support::make_linear;
using test_support::ParamBag;
using test_support::require_equal;
using test_support::samples;

namespace {

/// The loss of samples [first, first + count), reduced as `reduction`. mse_loss's mean is over
/// elements (2 per sample), so a micro-batch's weight is 2 * count.
Var loss_of(nn::Linear& model, std::int64_t first, std::int64_t count, LossReduction reduction) {
  auto [x, y] = samples(first, count);
  return nn::mse_loss(model.forward(Var(x)), Var(y), reduction);
}

/// One micro-batch: its samples, how its loss is reduced, and its weight (0: no samples counted).
struct MicroBatch {
  std::int64_t first;
  std::int64_t count;
  LossReduction reduction;
  double weight;
};

/// Rank r's window, the last entry reduced by dp.backward. A global batch of 16 samples (weight
/// 32): micro-batches of uneven sizes, mean and sum losses, a zero-weight one whose gradient must
/// be ignored, and (with 3 ranks) a rank with none. Mean micro-batches have 1, 2 or 4 samples, so
/// that w_k·(G_k of the mean) is exact.
std::vector<MicroBatch> window_of(int rank) {
  using R = LossReduction;
  if (rank == 0)
    return {{0, 1, R::Mean, 2}, {1, 3, R::Sum, 6}, {20, 2, R::Mean, 0}, {4, 4, R::Mean, 8}};
  if (rank == 1) return {{8, 4, R::Mean, 8}, {12, 4, R::Sum, 8}};
  return {};
}

}  // namespace

TEST_CASE(
    "no_sync micro-batches reduced by the next backward equal one replica on the global "
    "batch, bit for bit",
    "[optim]") {
  auto reference = dyadic_model();
  reference->zero_grad();
  loss_of(*reference, 0, 16, LossReduction::Mean).backward();
  const GradientsParams whole = GradientsParams::from_module(*reference);
  for (const bool overlap : {false, true}) {
    for (const int world : {2, 3}) {  // rank 2 has no micro-batch at all
      INFO("overlap " << overlap << ", " << world << " ranks");
      auto out = run_group(world, [&](Communicator& comm) {
        auto model = dyadic_model();
        DataParallel dp = DataParallel::initialize(comm, *model, 0, {.overlap = overlap});
        const std::vector<MicroBatch> window = window_of(comm.rank());
        // No zero_grad between micro-batches: no_sync leaves the model's gradients empty.
        for (std::size_t k = 0; k + 1 < window.size(); ++k) {
          const MicroBatch& m = window[k];
          dp.no_sync(*model, loss_of(*model, m.first, m.count, m.reduction), m.weight, m.reduction);
          if (model->weight().grad().defined()) throw std::runtime_error("gradient left behind");
        }
        if (dp.accumulator().micro_batches() != static_cast<std::int64_t>(window.size()) - 1 &&
            !window.empty()) {
          throw std::runtime_error("window not held");
        }
        GradientsParams g;
        if (window.empty()) {
          g = dp.backward(*model, Var(), 0.0, LossReduction::Mean);
        } else {
          const MicroBatch& m = window.back();
          g = dp.backward(*model, loss_of(*model, m.first, m.count, m.reduction), m.weight,
                          m.reduction);
        }
        if (!dp.accumulator().empty()) throw std::runtime_error("window not consumed");
        return std::make_pair(std::move(g), dp.last_total_weight());
      });
      for (int r = 0; r < world; ++r) {
        INFO("rank " << r << ": " << out[r].message());
        REQUIRE(out[r].ok());
        CHECK(out[r].value().second == 32.0);
        require_equal(out[r].value().first, whole);
      }
    }
  }
}

TEST_CASE("a parameter used only in an earlier micro-batch of a no_sync window is not unused",
          "[optim]") {
  // pytorch#69031: DDP's unused-parameter detection looked at the last micro-batch only. Rank 1
  // uses "b" in its first micro-batch and not in its last.
  for (const bool overlap : {false, true}) {
    INFO("overlap " << overlap);
    auto out = run_group(2, [&](Communicator& comm) {
      ParamBag model = branchy_model();
      DataParallel dp = DataParallel::initialize(
          comm, model, 0,
          {.overlap = overlap, .bucket_cap_bytes = 16, .first_bucket_cap_bytes = 16});
      const int r = comm.rank();
      dp.no_sync(model, branchy_loss(model, r, -1), 1.0, LossReduction::Sum);
      GradientsParams g =
          dp.backward(model, branchy_loss(model, r, r == 1 ? 1 : -1), 1.0, LossReduction::Sum);
      return std::make_pair(*g.get(1), *g.get(2));
    });
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r << ": " << out[r].message());
      // x = 1 + rank: each use adds the column sums 2·(1 + rank). a: (2 + 2 + 4 + 4) / 4;
      // b: (2 + 2 + 4) / 4.
      REQUIRE_THAT(out[r].value().first, TensorEqual(Tensor::full({2, 2}, 3.0)));
      REQUIRE_THAT(out[r].value().second, TensorEqual(Tensor::full({2, 2}, 2.0)));
    }
  }
}

TEST_CASE(
    "a parameter used in no micro-batch of a rank's no_sync window is one error on every "
    "rank naming it",
    "[optim]") {
  for (const bool overlap : {false, true}) {
    INFO("overlap " << overlap);
    auto out = run_group(3, [&](Communicator& comm) {
      ParamBag model = branchy_model();
      DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = overlap});
      const int r = comm.rank();
      const int skipper = r == 1 ? 1 : -1;  // rank 1 never uses "b"
      dp.no_sync(model, branchy_loss(model, r, skipper), 1.0, LossReduction::Sum);
      dp.no_sync(model, branchy_loss(model, r, skipper), 2.0, LossReduction::Mean);
      dp.backward(model, branchy_loss(model, r, skipper), 1.0, LossReduction::Sum);
    });
    for (int r = 0; r < 3; ++r) {
      INFO("rank " << r << ": " << out[r].message());
      REQUIRE(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
      CHECK_THAT(out[r].message(), Catch::Contains("'b' (ParamId 2"));
      CHECK_THAT(out[r].message(), Catch::Contains(overlap ? "on 1 rank(s)" : "rank 1"));
      CHECK(out[r].message() == out[0].message());
    }
  }
}

TEST_CASE("a no_sync window checkpointed mid-way by TrainingRecord resumes bit for bit",
          "[optim]") {
  // Random (non-dyadic) weights: only the same arithmetic gives the same bits.
  auto out = run_group(2, [](Communicator& comm) {
    const auto step = [&](bool interrupted) {
      auto model = make_linear(3, 2, 5, DType::F64);
      auto dp = std::make_unique<DataParallel>(
          DataParallel::initialize(comm, *model, 0, {.overlap = true}));
      const std::int64_t base = 4 * comm.rank();
      dp->no_sync(*model, loss_of(*model, base, 1, LossReduction::Mean), 2, LossReduction::Mean);
      if (interrupted) {
        CallerState caller;
        caller.rank = comm.rank();
        caller.world_size = 2;
        const std::string payload =
            TrainingRecord::capture(*model, nullptr, nullptr, &dp->accumulator(), caller)
                .serialize_payload();
        model = make_linear(3, 2, 9, DType::F64);  // another process: other values until restored
        dp = std::make_unique<DataParallel>(
            DataParallel::initialize(comm, *model, 0, {.overlap = true}));
        TrainingRecord::parse_payload(payload, "memory")
            .restore(*model, nullptr, nullptr, &dp->accumulator(),
                     {.rank = comm.rank(), .world_size = 2});
        if (dp->accumulator().micro_batches() != 1) throw std::runtime_error("window lost");
      }
      dp->no_sync(*model, loss_of(*model, base + 1, 2, LossReduction::Sum), 4, LossReduction::Sum);
      GradientsParams g = dp->backward(*model, loss_of(*model, base + 3, 1, LossReduction::Mean), 2,
                                       LossReduction::Mean);
      return std::vector<Tensor>{*g.get(1), *g.get(2)};
    };
    return std::make_pair(step(false), step(true));
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    const auto& [plain, resumed] = out[r].value();
    REQUIRE_THAT(resumed[0], TensorEqual(plain[0]));
    REQUIRE_THAT(resumed[1], TensorEqual(plain[1]));
  }
}

TEST_CASE("a held no_sync window makes any other reduction one error on every rank", "[optim]") {
  for (const bool overlap : {false, true}) {
    INFO("overlap " << overlap);
    auto out = run_group(2, [&](Communicator& comm) {
      ParamBag model = branchy_model();
      DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = overlap});
      if (comm.rank() == 0) {
        dp.no_sync(model, branchy_loss(model, 0, -1), 1.0, LossReduction::Sum);
      }
      std::vector<std::string> errors;
      const auto expect_error = [&](const auto& call) {
        try {
          call();
          errors.push_back("(no error)");
        } catch (const CollectiveError& e) {
          errors.push_back(e.what());
        }
      };
      expect_error([&] { dp.reduce(model, GradientsAccumulator().take()); });
      expect_error([&] {
        dp.backward(model, branchy_loss(model, comm.rank(), -1), 1.0, LossReduction::Sum,
                    AccumulatedGradients{});
      });
      // The window is still held; the backward that finishes it works (the failed calls ran
      // their backward: their gradients go first).
      model.zero_grad();
      GradientsParams g =
          dp.backward(model, branchy_loss(model, comm.rank(), -1), 1.0, LossReduction::Sum);
      errors.push_back(str(g.get(2)->to_vector<float>()[0]));
      return errors;
    });
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r << ": " << out[r].message());
      const auto& errors = out[r].value();
      for (int i = 0; i < 2; ++i) {
        CHECK_THAT(errors[i], Catch::Contains("rank 0: a no_sync window of 1 micro-batch(es) is "
                                              "held; finish it with DataParallel::backward"));
        CHECK(errors[i] == out[0].value()[i]);
      }
      // b: rank 0 used it twice (x = 1: 2 each), rank 1 once (x = 2: 4), over weight 3.
      CHECK(errors[2] == str(8.0f / 3.0f));
    }
  }
}

TEST_CASE("no_sync refuses a bad weight before running anything", "[optim]") {
  auto out = run_group(1, [](Communicator& comm) {
    ParamBag model = branchy_model();
    DataParallel dp = DataParallel::initialize(comm, model, 0);
    std::string message;
    try {
      dp.no_sync(model, branchy_loss(model, 0, -1), -1.0, LossReduction::Mean);
    } catch (const ValueError& e) {
      message = e.what();
    }
    return std::make_tuple(message, dp.accumulator().micro_batches(),
                           model.param("a").grad().defined());
  });
  const auto& [message, micro_batches, has_grad] = out[0].value();
  CHECK_THAT(message, Catch::Contains("DataParallel::no_sync: expected a finite local weight >= "
                                      "0 (the micro-batch's samples or tokens), got -1"));
  CHECK(micro_batches == 0);
  CHECK_FALSE(has_grad);
}
