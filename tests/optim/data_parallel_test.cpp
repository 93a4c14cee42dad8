// DataParallel: replica agreement and broadcast at initialize, token-weighted reduce, and every
// contract error raised on all ranks together.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "autodiff/ops/elementwise.h"
#include "optim/data_parallel.h"
#include "optim/sgd.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/shape_ops.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::error_kind;
using ruccl::testing::run_group;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;
using test_support::make_linear;
using test_support::ParamBag;

namespace {

// Rank-local data of the weighted test: rank 0 has 2 samples, rank 1 has 1 (dyadic values, so
// every gradient sum below is exact in F32).
Tensor xs(int rank) {
  return rank == 0 ? Tensor::from_vector<float>({1.0f, 2.0f, -0.5f, 0.5f, 1.5f, -1.0f}, {2, 3})
                   : Tensor::from_vector<float>({-2.0f, 0.25f, 1.0f}, {1, 3});
}
Tensor ys(int rank) {
  return rank == 0 ? Tensor::from_vector<float>({1.0f, 0.0f, -1.0f, 0.5f}, {2, 2})
                   : Tensor::from_vector<float>({0.25f, 2.0f}, {1, 2});
}

/// Every rank's outcome must be a CollectiveError of `kind` with the same message containing
/// `text`.
template <typename T>
void require_same_error(const std::vector<ruccl::testing::RankOutcome<T>>& out,
                        CollectiveErrorKind kind, const std::string& text) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE_FALSE(out[r].ok());
    CHECK(error_kind(out[r]) == kind);
    CHECK_THAT(out[r].message(), Catch::Contains(text));
    CHECK(out[r].message() == out[0].message());
  }
}

}  // namespace

TEST_CASE("DataParallel::initialize gives every rank root's parameters, frozen and tied too",
          "[optim]") {
  auto out = run_group(3, [](Communicator& comm) {
    Generator gen(100 + comm.rank());  // a different start on every rank
    nn::Param w(1, Tensor::randn({2, 3}, gen));
    nn::Param frozen(2, Tensor::randn({4}, gen), /*trainable=*/false);
    ParamBag model({{"w", w}, {"frozen", frozen}, {"w_again", w}});
    DataParallel::initialize(comm, model, /*root=*/1);
    if (!model.param("w_again").same(model.param("w"))) throw std::runtime_error("tie lost");
    return std::make_pair(model.param("w").value(), model.param("frozen").value());
  });
  Generator root_gen(101);
  const Tensor w = Tensor::randn({2, 3}, root_gen);
  const Tensor frozen = Tensor::randn({4}, root_gen);
  for (int r = 0; r < 3; ++r) {
    REQUIRE_THAT(out[r].value().first, TensorEqual(w));
    REQUIRE_THAT(out[r].value().second, TensorEqual(frozen));
  }
}

TEST_CASE("DataParallel::initialize accepts replicas every rank built itself, ids from paths",
          "[optim]") {
  auto out = run_group(3, [](Communicator& comm) {
    Generator gen(200 + comm.rank());  // the same code, other values on every rank
    nn::Sequential model({std::make_shared<nn::Linear>(3, 4, gen), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Linear>(4, 2, gen)});
    DataParallel::initialize(comm, model, /*root=*/0);
    return model.param("2.weight").value();
  });
  Generator root_gen(200);
  nn::Sequential root({std::make_shared<nn::Linear>(3, 4, root_gen), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(4, 2, root_gen)});
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(out[r].ok());
    CHECK_THAT(out[r].value(), TensorEqual(root.param("2.weight").value()));
  }
}

TEST_CASE("DataParallel::initialize names the path and the fix when ParamIds differ", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    auto model = make_linear(3, 2, 1);
    model->assign_param_ids(1 + 10 * static_cast<nn::ParamId>(comm.rank()));
    DataParallel::initialize(comm, *model, /*root=*/0);
    return 0;
  });
  require_same_error(out, CollectiveErrorKind::ArgumentMismatch,
                     "rank 1's replica differs from rank 0's: 'weight' has ParamId 1 on rank 0 "
                     "but 11 on rank 1. ParamIds come from the parameters' paths");
  CHECK_THAT(out[0].message(), Catch::Contains("call model.assign_param_ids(1) on every rank"));
  // Gradients of another model are named by their path in it (the lowest ParamId first).
  auto wrong = run_group(2, [](Communicator& comm) {
    auto model = make_linear(3, 2, 1);
    DataParallel dp = DataParallel::initialize(comm, *model, /*root=*/0);
    Generator gen(2);
    nn::Sequential other({std::make_shared<nn::Linear>(3, 2, gen)});
    nn::mse_loss(other.forward(Var(xs(0))), Var(Tensor::zeros({2, 2}))).backward();
    return dp.reduce(*model, GradientsParams::from_module(other), 1.0, LossReduction::Sum).size();
  });
  require_same_error(wrong, CollectiveErrorKind::InvalidArgument,
                     str("a gradient for ParamId ", nn::param_id_for_path("0.bias"),
                         " ('0.bias'), which is not a parameter of the model"));
}

TEST_CASE("DataParallel::initialize fails on every rank when replicas differ, moving nothing",
          "[optim]") {
  struct Case {
    const char* what;
    CollectiveErrorKind kind;
    const char* text;
  };
  const std::vector<Case> cases = {
      {"shape", CollectiveErrorKind::ShapeMismatch,
       "rank 2's replica differs from rank 0's: 'w': expected shape [2, 3] (rank 0), got [3, 2]"},
      {"dtype", CollectiveErrorKind::DTypeMismatch, "'b': expected dtype F32 (rank 0), got F64"},
      {"frozen", CollectiveErrorKind::ArgumentMismatch,
       "'b' is trainable on rank 0 but frozen on rank 2"},
      {"path", CollectiveErrorKind::ArgumentMismatch,
       "parameter #1 is 'b' on rank 0 but 'bias' on rank 2"},
      {"tie", CollectiveErrorKind::ArgumentMismatch,
       "'b' is not tied on rank 0 but tied to 'w' on rank 2"},
      {"count", CollectiveErrorKind::ArgumentMismatch, "'extra' exists only on rank 2"},
      {"root", CollectiveErrorKind::RootMismatch, "rank 0 names root 0 but rank 2 names root 1"},
      {"duplicate id", CollectiveErrorKind::InvalidArgument,
       "rank 2: parameters 'w' and 'b' are distinct but share ParamId 1"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const std::string what = c.what;
      auto out = run_group(3, [&](Communicator& comm) {
        const bool odd = comm.rank() == 2;
        const float mine = static_cast<float>(comm.rank());
        nn::Param w(1, Tensor::full(odd && what == "shape" ? Shape{3, 2} : Shape{2, 3}, mine));
        nn::Param b(odd && what == "duplicate id" ? 1 : 2,
                    Tensor::full({2}, mine, odd && what == "dtype" ? DType::F64 : DType::F32),
                    !(odd && what == "frozen"));
        std::vector<std::pair<std::string, nn::Param>> params = {
            {"w", w}, {odd && what == "path" ? "bias" : "b", odd && what == "tie" ? w : b}};
        if (odd && what == "count") params.push_back({"extra", nn::Param(3, Tensor::zeros({1}))});
        ParamBag model(params);
        try {
          DataParallel::initialize(comm, model, odd && what == "root" ? 1 : 0);
        } catch (const CollectiveError&) {
          // Nothing moved, and the group is still usable.
          if (model.param("w").value().to(DType::F32).to_vector<float>()[0] != mine) {
            throw std::runtime_error("a parameter moved before the error");
          }
          comm.barrier();
          throw;
        }
        return 0;
      });
      require_same_error(out, c.kind, c.text);
    }
  }
}

TEST_CASE("two ranks with weights 2 and 1 train like one replica on the summed loss / 3",
          "[optim]") {
  constexpr int kSteps = 4;
  auto out = run_group(2, [](Communicator& comm) {
    auto model = make_linear(3, 2, 10 + comm.rank());  // initialize() makes them agree
    DataParallel dp = DataParallel::initialize(comm, *model, 0);
    Sgd sgd({.momentum = 0.5});
    std::vector<std::vector<Tensor>> history;
    for (int step = 0; step < kSteps; ++step) {
      model->zero_grad();
      Var loss = nn::mse_loss(model->forward(Var(xs(comm.rank()))), Var(ys(comm.rank())),
                              nn::Reduction::Sum);
      loss.backward();
      const double weight = static_cast<double>(xs(comm.rank()).size(0));
      GradientsParams g =
          dp.reduce(*model, GradientsParams::from_module(*model), weight, LossReduction::Sum);
      if (dp.last_total_weight() != 3.0) throw std::runtime_error("total weight is not 3");
      history.push_back({*g.get(1), *g.get(2)});
      sgd.step(0.125, *model, g);
      history.push_back({model->weight().value().clone(), model->bias().value().clone()});
    }
    return history;
  });

  // The reference: one replica, all three samples, loss = (sum of squared errors) / 3.
  auto model = make_linear(3, 2, 10);
  Sgd sgd({.momentum = 0.5});
  const Tensor x = cat({xs(0), xs(1)}, 0);
  const Tensor y = cat({ys(0), ys(1)}, 0);
  {
    // Step 1 exactly: with dyadic data G_0 + G_1 is the one-replica gradient of the sum, and
    // both sides divide it by 3 once in F32.
    auto exact = make_linear(3, 2, 10);
    nn::mse_loss(exact->forward(Var(x)), Var(y), nn::Reduction::Sum).backward();
    for (int r = 0; r < 2; ++r) {
      REQUIRE_THAT(out[r].value()[0][0], TensorEqual(div(exact->weight().grad(), 3.0)));
      REQUIRE_THAT(out[r].value()[0][1], TensorEqual(div(exact->bias().grad(), 3.0)));
    }
  }
  for (int step = 0; step < kSteps; ++step) {
    model->zero_grad();
    Var loss = nn::mse_loss(model->forward(Var(x)), Var(y), nn::Reduction::Sum) / 3.0;
    loss.backward();
    GradientsParams g = GradientsParams::from_module(*model);
    sgd.step(0.125, *model, g);
    for (int r = 0; r < 2; ++r) {
      INFO("step " << step << " rank " << r);
      const auto& h = out[r].value();
      // F32: the two-rank sum G_0 + G_1 and the one-replica gradient round differently after
      // the first step (the first step is exact: dyadic data), hence a few-ulp tolerance.
      REQUIRE_THAT(h[2 * step][0], TensorNear(*g.get(1), 1e-6, 1e-7));
      REQUIRE_THAT(h[2 * step][1], TensorNear(*g.get(2), 1e-6, 1e-7));
      REQUIRE_THAT(h[2 * step + 1][0], TensorNear(model->weight().value(), 1e-6, 1e-7));
      REQUIRE_THAT(h[2 * step + 1][1], TensorNear(model->bias().value(), 1e-6, 1e-7));
    }
  }
}

TEST_CASE("a zero-weight rank contributes zeros and needs no gradient", "[optim]") {
  auto out = run_group(3, [](Communicator& comm) {
    auto model = make_linear(2, 1, 5);
    DataParallel dp = DataParallel::initialize(comm, *model, 0);
    GradientsParams g;
    double weight = 0.0;
    if (comm.rank() == 0) {
      g.insert(1, Tensor::from_vector<float>({3.0f, 6.0f}, {1, 2}));
      g.insert(2, Tensor::from_vector<float>({9.0f}));
      weight = 3.0;
    } else if (comm.rank() == 1) {  // weight 0 but a gradient: ignored
      g.insert(1, Tensor::from_vector<float>({100.0f, 100.0f}, {1, 2}));
      g.insert(2, Tensor::from_vector<float>({100.0f}));
    }  // rank 2: weight 0 and no gradient at all
    GradientsParams fp32 = dp.reduce_fp32(*model, g, weight, LossReduction::Sum);
    return std::make_pair(*fp32.get(1), *fp32.get(2));
  });
  for (int r = 0; r < 3; ++r) {
    REQUIRE_THAT(out[r].value().first,
                 TensorEqual(Tensor::from_vector<float>({1.0f, 2.0f}, {1, 2})));
    REQUIRE_THAT(out[r].value().second, TensorEqual(Tensor::from_vector<float>({3.0f})));
  }
}

TEST_CASE("reduce returns the parameter dtype, reduce_fp32 F32, tied parameters once", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    nn::Param w(1, Tensor::zeros({2}, DType::F64));
    nn::Param frozen(2, Tensor::zeros({2}), false);
    ParamBag model({{"w", w}, {"frozen", frozen}, {"w_tied", w}});
    DataParallel dp = DataParallel::initialize(comm, model, 0);
    GradientsParams g;
    g.insert(1, Tensor::full({2}, comm.rank() + 1.0, DType::F64));
    GradientsParams a = dp.reduce(model, g, 1.0, LossReduction::Sum);
    GradientsParams b = dp.reduce_fp32(model, g, 1.0, LossReduction::Sum);
    return std::make_tuple(a.ids(), *a.get(1), *b.get(1));
  });
  for (int r = 0; r < 2; ++r) {
    const auto& [ids, as_param, as_fp32] = out[r].value();
    CHECK(ids == std::vector<ParamId>{1});
    REQUIRE_THAT(as_param, TensorEqual(Tensor::full({2}, 1.5, DType::F64)));
    REQUIRE_THAT(as_fp32, TensorEqual(Tensor::full({2}, 1.5, DType::F32)));
  }
}

TEST_CASE("every DataParallel::reduce contract error fails on all ranks together", "[optim]") {
  struct Case {
    const char* what;
    CollectiveErrorKind kind;
    const char* text;
  };
  const std::vector<Case> cases = {
      {"missing", CollectiveErrorKind::InvalidArgument,
       "rank 1: no gradient for trainable parameter 'bias' (ParamId 2)"},
      {"frozen", CollectiveErrorKind::InvalidArgument,
       "rank 1: a gradient for frozen parameter 'weight' (ParamId 1)"},
      {"shape", CollectiveErrorKind::ShapeMismatch,
       "rank 1: the gradient of 'bias': expected shape [1], got [2]"},
      {"unknown", CollectiveErrorKind::InvalidArgument,
       "rank 1: a gradient for ParamId 77, which is not a parameter of the model"},
      {"negative weight", CollectiveErrorKind::InvalidArgument,
       "rank 1: expected a finite local weight >= 0, got -1"},
      {"zero total", CollectiveErrorKind::InvalidArgument, "the total weight of all ranks is 0"},
      {"replica", CollectiveErrorKind::ArgumentMismatch,
       "'weight' is trainable on rank 0 but frozen on rank 1"},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const std::string what = c.what;
      auto out = run_group(2, [&](Communicator& comm) {
        auto model = make_linear(2, 1, 3);
        DataParallel dp = DataParallel::initialize(comm, *model, 0);
        const bool odd = comm.rank() == 1;
        GradientsParams g;
        g.insert(1, Tensor::ones({1, 2}));
        g.insert(2, Tensor::ones({odd && what == "shape" ? 2 : 1}));
        double weight = what == "zero total" ? 0.0 : 1.0;
        if (odd) {
          if (what == "missing") g.remove(2);
          if (what == "unknown") g.insert(77, Tensor::ones({1}));
          if (what == "negative weight") weight = -1.0;
          if (what == "frozen" || what == "replica") model->weight().set_trainable(false);
          if (what == "replica") g.remove(1);
        }
        try {
          dp.reduce(*model, g, weight, LossReduction::Sum);
        } catch (const CollectiveError&) {
          // The group is still usable: a correct reduce afterwards succeeds on every rank.
          model->weight().set_trainable(true);
          GradientsParams ok;
          ok.insert(1, Tensor::ones({1, 2}));
          ok.insert(2, Tensor::ones({1}));
          dp.reduce(*model, ok, 1.0, LossReduction::Sum);
          throw;
        }
        return 0;
      });
      require_same_error(out, c.kind, c.text);
    }
  }
  SECTION("a missing gradient is a zero under MissingGradientPolicy::Zero") {
    auto out = run_group(2, [](Communicator& comm) {
      auto model = make_linear(2, 1, 3);
      DataParallel dp = DataParallel::initialize(comm, *model, 0);
      GradientsParams g;
      g.insert(1, Tensor::ones({1, 2}));
      if (comm.rank() == 0) g.insert(2, Tensor::full({1}, 4.0));
      return *dp.reduce(*model, g, 1.0, LossReduction::Sum, MissingGradientPolicy::Zero).get(2);
    });
    for (int r = 0; r < 2; ++r) {
      REQUIRE_THAT(out[r].value(), TensorEqual(Tensor::full({1}, 2.0)));
    }
  }
}

namespace {

/// A global batch of `n` samples for Linear(4 -> 3) + cross_entropy, in `dtype`.
std::pair<Tensor, Tensor> global_batch(std::int64_t n, DType dtype) {
  Generator gen(77);
  Tensor x = Tensor::randn({n, 4}, gen, dtype);
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int64_t>(i * 7 % 3));
  return {x, Tensor::from_vector<std::int64_t>(labels)};
}

/// The parameters after each of `steps` SGD steps, and the first step's gradients, of `world`
/// ranks holding `counts[r]` consecutive samples of the global batch each, their local losses
/// reduced as `loss` says; or (world == 0) of one replica on the whole batch with a mean loss.
std::vector<Tensor> data_parallel_run(int world, const std::vector<std::int64_t>& counts,
                                      LossReduction loss, DType dtype, int steps) {
  std::int64_t n = 0;
  for (std::int64_t c : counts) n += c;
  const auto [x, y] = global_batch(n, dtype);
  auto train = [&, x = x, y = y](Communicator* comm) {
    auto model = make_linear(4, 3, 5, dtype);
    std::optional<DataParallel> dp;
    if (comm != nullptr) dp.emplace(DataParallel::initialize(*comm, *model, 0));
    std::int64_t lo = 0;
    for (int r = 0; comm != nullptr && r < comm->rank(); ++r) lo += counts[r];
    const std::int64_t local = comm != nullptr ? counts[comm->rank()] : n;
    Sgd sgd({.momentum = 0.5});
    std::vector<Tensor> out;
    for (int step = 0; step < steps; ++step) {
      model->zero_grad();
      GradientsParams g;
      if (local > 0) {
        const nn::Reduction reduction = comm == nullptr || loss == LossReduction::Mean
                                            ? nn::Reduction::Mean
                                            : nn::Reduction::Sum;
        nn::cross_entropy(model->forward(Var(x.narrow(0, lo, local))), y.narrow(0, lo, local),
                          reduction)
            .backward();
        g = GradientsParams::from_module(*model);
      }
      if (dp) g = dp->reduce(*model, g, static_cast<double>(local), loss);
      if (step == 0) out.insert(out.end(), {*g.get(1), *g.get(2)});
      sgd.step(0.5, *model, g);
      out.insert(out.end(), {model->weight().value().clone(), model->bias().value().clone()});
    }
    return out;
  };
  if (world == 0) return train(nullptr);
  auto results = run_group(world, [&](Communicator& comm) { return train(&comm); });
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r << ": " << results[r].message());
    REQUIRE(results[r].ok());
    for (std::size_t i = 0; i < results[r].value().size(); ++i) {
      REQUIRE_THAT(results[r].value()[i], TensorEqual(results[0].value()[i]));
    }
  }
  return results[0].value();
}

/// Every rank's run against one replica on the global batch, to `rtol`.
void check_against_one_replica(const std::vector<std::int64_t>& counts, LossReduction loss,
                               DType dtype, double rtol, double atol) {
  constexpr int kSteps = 3;
  const auto reference = data_parallel_run(0, counts, loss, dtype, kSteps);
  const auto got = data_parallel_run(static_cast<int>(counts.size()), counts, loss, dtype, kSteps);
  REQUIRE(got.size() == reference.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO((i < 2 ? "the first reduced gradient #" : "the parameter after a step #") << i);
    REQUIRE_THAT(got[i], TensorNear(reference[i], rtol, atol));
  }
}

}  // namespace

TEST_CASE("reduce of mean losses over uneven shards gives the gradient of the global mean",
          "[optim]") {
  // F32: a few ulps apart (the ranks' partial sums round in another order); a mean loss taken
  // for a sum would be off by a factor of w_r / Σ w — 1/7 to 4/7 here.
  SECTION("3 ranks of 1, 2 and 4 samples") {
    check_against_one_replica({1, 2, 4}, LossReduction::Mean, DType::F32, 1e-5, 1e-6);
  }
  SECTION("4 ranks, one of them empty") {
    check_against_one_replica({3, 0, 1, 5}, LossReduction::Mean, DType::F32, 1e-5, 1e-6);
  }
}

TEST_CASE("reduce of sum losses over uneven shards gives the gradient of the global mean",
          "[optim]") {
  SECTION("2 ranks of 5 and 2 samples") {
    check_against_one_replica({5, 2}, LossReduction::Sum, DType::F32, 1e-5, 1e-6);
  }
  SECTION("4 ranks, one of them empty") {
    check_against_one_replica({3, 0, 1, 5}, LossReduction::Sum, DType::F32, 1e-5, 1e-6);
  }
}

TEST_CASE("reduce of an F64 model matches one replica on the global batch to F64 rounding",
          "[optim]") {
  // Reduced in FP32, the parameters would differ from one replica's by ~1e-8 after one step.
  // In F64 they differ only by the order the ranks' partial sums are added in: a few ulps.
  constexpr double kRtol = 1e-14;
  constexpr double kAtol = 1e-16;
  SECTION("2 ranks, mean losses") {
    check_against_one_replica({5, 2}, LossReduction::Mean, DType::F64, kRtol, kAtol);
  }
  SECTION("3 ranks, sum losses") {
    check_against_one_replica({1, 2, 4}, LossReduction::Sum, DType::F64, kRtol, kAtol);
  }
  SECTION("4 ranks, mean losses, one rank empty") {
    check_against_one_replica({3, 0, 1, 5}, LossReduction::Mean, DType::F64, kRtol, kAtol);
  }
}

TEST_CASE("reduce accumulates F64 in F64 and F32, F16 and BF16 in F32 in one call", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    nn::Param w64(1, Tensor::zeros({2}, DType::F64));
    nn::Param w32(2, Tensor::zeros({2}, DType::F32));
    nn::Param w16(3, Tensor::zeros({2}, DType::F16));
    nn::Param wbf(4, Tensor::zeros({3}, DType::BF16));
    ParamBag model({{"w64", w64}, {"w32", w32}, {"w16", w16}, {"wbf", wbf}});
    DataParallel dp = DataParallel::initialize(comm, model, 0);
    // Sum losses of weights 1 and 2 whose gradients sum to 1: every result is 1/3, which F32
    // rounds (to 0.3333333432674408) and F64 does not.
    GradientsParams g;
    const double mine = comm.rank() == 0 ? 1.0 : 0.0;
    g.insert(1, Tensor::full({2}, mine, DType::F64));
    g.insert(2, Tensor::full({2}, mine, DType::F32));
    g.insert(3, Tensor::full({2}, mine, DType::F16));
    g.insert(4, Tensor::full({3}, mine, DType::BF16));
    GradientsParams r = dp.reduce(model, g, comm.rank() + 1.0, LossReduction::Sum);
    GradientsParams f = dp.reduce_fp32(model, g, comm.rank() + 1.0, LossReduction::Sum);
    return std::vector<Tensor>{*r.get(1), *r.get(2), *r.get(3), *r.get(4), *f.get(1)};
  });
  const Tensor third32 = Tensor::full({2}, 1.0 / 3.0, DType::F32);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(out[r].ok());
    const auto& v = out[r].value();
    REQUIRE_THAT(v[0], TensorEqual(Tensor::full({2}, 1.0 / 3.0, DType::F64)));
    REQUIRE_THAT(v[1], TensorEqual(third32));
    REQUIRE_THAT(v[2], TensorEqual(third32.to(DType::F16)));
    REQUIRE_THAT(v[3], TensorEqual(Tensor::full({3}, 1.0 / 3.0, DType::F32).to(DType::BF16)));
    REQUIRE_THAT(v[4], TensorEqual(third32));  // reduce_fp32: F32 for the F64 parameter too
  }
}
