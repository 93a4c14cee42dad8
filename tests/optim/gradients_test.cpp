// GradientsParams (from_module, map operations, agreement-checked all_reduce_with);
// GradientsAccumulator is tested in accumulation_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "autodiff/nn/loss.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/gradients_accumulator.h"
#include "optim/gradients_params.h"
#include "tensor/ops/elementwise.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::error_kind;
using ruccl::testing::error_ranks;
using ruccl::testing::run_group;
using ruccl::testing::TensorEqual;

namespace {

/// Rank r's gradient of ParamId id: values id*10 + r + 0.25*i, shape [2, 3].
Tensor rank_grad(ParamId id, int rank) {
  std::vector<float> v(6);
  for (int i = 0; i < 6; ++i) v[i] = static_cast<float>(id) * 10.0f + rank + 0.25f * i;
  return Tensor::from_vector<float>(v, {2, 3});
}

}  // namespace

TEST_CASE("GradientsParams holds one gradient per ParamId in ascending order", "[optim]") {
  GradientsParams g;
  g.insert(7, Tensor::ones({2}));
  g.insert(3, Tensor::zeros({1}));
  g.insert(5, Tensor::full({3}, 2.0));
  CHECK(g.ids() == std::vector<ParamId>{3, 5, 7});
  CHECK(g.size() == 3);
  REQUIRE(g.get(5).has_value());
  CHECK(g.get(5)->numel() == 3);
  CHECK_FALSE(g.get(4).has_value());
  g.insert(5, Tensor::zeros({4}));  // replaces
  CHECK(g.get(5)->numel() == 4);
  CHECK(g.remove(3).has_value());
  CHECK_FALSE(g.remove(3).has_value());
  CHECK(g.ids() == std::vector<ParamId>{5, 7});
  CHECK_THROWS_AS(g.insert(1, Tensor()), ValueError);
}

TEST_CASE("GradientsParams::from_module takes the trainable parameters' gradients", "[optim]") {
  auto model = test_support::make_linear(3, 2, 1);
  CHECK(GradientsParams::from_module(*model).empty());
  Var x(Tensor::from_vector<float>({1, 2, 3}, {1, 3}));
  Var loss = nn::mse_loss(model->forward(x), Var(Tensor::zeros({1, 2})));
  loss.backward();
  GradientsParams g = GradientsParams::from_module(*model);
  CHECK(g.ids() == std::vector<ParamId>{1, 2});
  CHECK(g.get(1)->shape() == Shape{2, 3});
  model->bias().set_trainable(false);
  CHECK(GradientsParams::from_module(*model).ids() == std::vector<ParamId>{1});
}

TEST_CASE("all_reduce_with averages every gradient whatever the insertion order", "[optim]") {
  for (int world : {1, 2, 3}) {
    auto out = run_group(world, [&](Communicator& comm) {
      std::vector<ParamId> ids = {4, 1, 9};
      std::rotate(ids.begin(), ids.begin() + comm.rank() % 3, ids.end());
      GradientsParams g;
      for (ParamId id : ids) g.insert(id, rank_grad(id, comm.rank()));
      GradientsParams mean = g.all_reduce_with(comm, ReduceOperation::Mean);
      GradientsParams sum = g.all_reduce_with(comm, ReduceOperation::Sum);
      // The input is untouched.
      for (ParamId id : ids) {
        if (!equal(*g.get(id), rank_grad(id, comm.rank()))) throw std::runtime_error("modified");
      }
      return std::make_pair(mean, sum);
    });
    for (int r = 0; r < world; ++r) {
      INFO("world " << world << " rank " << r);
      const auto& [mean, sum] = out[r].value();
      CHECK(mean.ids() == std::vector<ParamId>{1, 4, 9});
      for (ParamId id : {1, 4, 9}) {
        // mean over r of (id*10 + r + 0.25 i) = id*10 + (world-1)/2 + 0.25 i: exact in F32.
        std::vector<float> expect_mean(6), expect_sum(6);
        for (int i = 0; i < 6; ++i) {
          expect_mean[i] = static_cast<float>(id) * 10.0f + (world - 1) / 2.0f + 0.25f * i;
          expect_sum[i] = expect_mean[i] * static_cast<float>(world);
        }
        REQUIRE_THAT(*mean.get(id), TensorEqual(Tensor::from_vector<float>(expect_mean, {2, 3})));
        REQUIRE_THAT(*sum.get(id), TensorEqual(Tensor::from_vector<float>(expect_sum, {2, 3})));
      }
    }
  }
}

TEST_CASE("all_reduce_with fails on every rank when one rank misses a gradient or disagrees",
          "[optim]") {
  struct Case {
    const char* what;
    CollectiveErrorKind kind;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"missing", CollectiveErrorKind::ArgumentMismatch,
       "ParamId 2 has a gradient on rank 0 but none on rank 2"},
      {"shape", CollectiveErrorKind::ShapeMismatch,
       "ParamId 2: expected shape [2, 3] (rank 0), got [3, 2] on rank 2"},
      {"dtype", CollectiveErrorKind::DTypeMismatch,
       "ParamId 2: expected dtype F32 (rank 0), got F64 on rank 2"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      auto out = run_group(3, [&](Communicator& comm) {
        GradientsParams g;
        g.insert(1, rank_grad(1, comm.rank()));
        Tensor second = rank_grad(2, comm.rank());
        if (comm.rank() == 2) {
          if (std::string(c.what) == "shape") second = second.reshape({3, 2});
          if (std::string(c.what) == "dtype") second = second.to(DType::F64);
        }
        if (!(comm.rank() == 2 && std::string(c.what) == "missing")) g.insert(2, second);
        std::string message;
        try {
          g.all_reduce_with(comm, ReduceOperation::Mean);
        } catch (const CollectiveError&) {
          // Afterwards the group still works: the check runs before any gradient moves.
          GradientsParams ok;
          ok.insert(1, rank_grad(1, comm.rank()));
          ok.all_reduce_with(comm, ReduceOperation::Sum);
          throw;
        }
        return 0;
      });
      for (int r = 0; r < 3; ++r) {
        INFO("rank " << r << ": " << out[r].message());
        CHECK(error_kind(out[r]) == c.kind);
        CHECK_THAT(out[r].message(), Catch::Contains(c.message));
        CHECK(out[r].message() == out[0].message());
        const std::vector<int> ranks = error_ranks(out[r]);
        CHECK(std::find(ranks.begin(), ranks.end(), 2) != ranks.end());
      }
    }
  }
}

TEST_CASE("all_reduce_with agrees for replicas every rank built itself and names paths otherwise",
          "[optim]") {
  // Every rank builds its own Linear (no clone, no assign_param_ids): the ids come from the paths,
  // so they agree. Rank 1 then changes one thing per section.
  const std::string what = GENERATE(as<std::string>{}, "same", "ids", "frozen");
  auto out = run_group(2, [&](Communicator& comm) {
    Generator gen(3);
    nn::Linear model(3, 2, gen);
    if (comm.rank() == 1 && what == "ids") model.assign_param_ids(11);
    if (comm.rank() == 1 && what == "frozen") model.bias().set_trainable(false);
    Var x(Tensor::from_vector<float>({1, 2, 3}, {1, 3}));
    nn::mse_loss(model.forward(x), Var(Tensor::zeros({1, 2}))).backward();
    GradientsParams mean =
        GradientsParams::from_module(model).all_reduce_with(comm, ReduceOperation::Mean);
    return mean.path(model.weight().id());
  });
  INFO(what << ": " << out[0].message());
  if (what == "same") {
    REQUIRE(out[0].ok());
    CHECK(out[0].value() == "weight");  // the result keeps the paths for later messages
    return;
  }
  const std::string text =
      what == "ids" ? str("'weight' has ParamId ", nn::param_id_for_path("weight"),
                          " on rank 0 but 11 on rank 1. ParamIds come from the parameters' paths")
                    : str("ParamId ", nn::param_id_for_path("bias"),
                          " ('bias') has a gradient on rank 0 but none on rank 1");
  for (int r = 0; r < 2; ++r) {
    REQUIRE_FALSE(out[r].ok());
    CHECK(error_kind(out[r]) == CollectiveErrorKind::ArgumentMismatch);
    CHECK_THAT(out[r].message(), Catch::Contains(text));
    CHECK(out[r].message() == out[0].message());
  }
  if (what == "ids") CHECK_THAT(out[0].message(), Catch::Contains("model.assign_param_ids(1)"));
}
