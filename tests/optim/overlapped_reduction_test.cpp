// DataParallel::backward with overlap: buckets reduced while backward runs, bit-identical to the
// plain reduce with 2 ranks, the same on every rank, unused parameters one error on every rank,
// and the last micro-batch of an accumulation window overlapping the window's one reduction.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>

#include "autodiff/collective/collective_ops.h"
#include "autodiff/nn/activation.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/reduce.h"
#include "collective/trace/call_trace.h"
#include "optim/data_parallel.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::error_kind;
using ruccl::testing::run_group;
using ruccl::testing::run_group_with;
using ruccl::testing::TensorEqual;
using test_support::branchy_loss;
using test_support::branchy_model;
using test_support::make_mlp;
using test_support::ParamBag;

namespace {

/// Rank r's batch: r + 1 samples (uneven weights). `dyadic`: multiples of 1/4 in [-2, 2].
std::pair<Tensor, Tensor> batch(int rank, int step, bool dyadic, DType dtype) {
  Generator gen(1000 + 17 * rank + step);
  const std::int64_t n = rank + 1;
  Tensor x = Tensor::randn({n, 5}, gen, dtype);
  Tensor y = Tensor::randn({n, 3}, gen, dtype);
  if (dyadic) {
    x = Tensor::from_vector<double>(
            [&] {
              std::vector<double> v;
              for (std::int64_t i = 0; i < n * 5; ++i)
                v.push_back(0.25 * ((i * 7 + rank) % 17 - 8));
              return v;
            }(),
            {n, 5})
            .to(dtype);
    y = Tensor::full({n, 3}, 0.5 * rank - 0.25, dtype);
  }
  return {x, y};
}

/// For each cap: the plain reduce's and the overlapped backward's gradients of one step (same
/// replica, same data), [cap][0 plain | 1 overlapped][ParamId - 1].
using Results = std::vector<std::array<std::vector<Tensor>, 2>>;

Results plain_and_overlapped(Communicator& comm, bool dyadic, LossReduction reduction, DType dtype,
                             bool exact_buckets = true) {
  const std::vector<std::int64_t> caps = {4, 200, 1 << 20};  // bytes: 4 buckets, 3, 1
  auto mlp = make_mlp(7, dtype);
  nn::Sequential& model = *mlp;
  DataParallel plain = DataParallel::initialize(comm, model, 0);
  const auto xy = batch(comm.rank(), 0, dyadic, dtype);
  const Tensor& x = xy.first;
  const Tensor& y = xy.second;
  const auto loss_of = [&] {
    model.zero_grad();
    return nn::mse_loss(model.forward(Var(x)), Var(y), reduction);
  };
  const double weight = static_cast<double>(x.size(0));
  Results out;
  const std::int64_t scale = dtype == DType::F64 ? 2 : 1;  // the same plans in F64 bytes
  for (std::int64_t cap : caps) {
    auto& pair = out.emplace_back();
    loss_of().backward();
    GradientsParams g = plain.reduce(model, GradientsParams::from_module(model), weight, reduction);
    for (ParamId id = 1; id <= 4; ++id) pair[0].push_back(*g.get(id));
    DataParallel dp = DataParallel::initialize(comm, model, 0,
                                               {.overlap = true,
                                                .bucket_cap_bytes = scale * cap,
                                                .first_bucket_cap_bytes = scale * cap / 2 + 1,
                                                .exact_buckets = exact_buckets});
    const std::size_t expected_buckets = cap == 4 ? 4 : cap == 200 ? 3 : 1;
    if (dp.bucket_plan().buckets().size() != expected_buckets) throw std::runtime_error("plan");
    GradientsParams o = dp.backward(model, loss_of(), weight, reduction);
    if (dp.last_total_weight() != plain.last_total_weight()) throw std::runtime_error("weight");
    for (ParamId id = 1; id <= 4; ++id) pair[1].push_back(*o.get(id));
  }
  return out;
}

/// Every plan's result is the same on every rank and equals the plain reduce bit for bit: each
/// bucket is reduced with its range of reduce()'s buffer as its fold window, so every element folds
/// over the ranks in reduce()'s order, at any world size.
/// `every_plan` false (exact_buckets off, 3+ ranks): only the one-bucket plan (the last cap) is
/// cut like reduce()'s buffer; the others fold in another order and agree to a few ulps.
void require_equal_everywhere(const std::vector<ruccl::testing::RankOutcome<Results>>& out,
                              bool every_plan = true) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    const Results& res = out[r].value();
    for (std::size_t c = 0; c < res.size(); ++c) {
      for (std::size_t i = 0; i < 4; ++i) {
        INFO("rank " << r << " cap #" << c << " ParamId " << i + 1);
        REQUIRE_THAT(res[c][1][i], TensorEqual(out[0].value()[c][1][i]));
        if (every_plan || c + 1 == res.size()) {
          REQUIRE_THAT(res[c][1][i], TensorEqual(res[c][0][i]));
        } else {  // 3 or 4 ranks' F32 sums in another order
          REQUIRE_THAT(res[c][1][i], ruccl::testing::TensorNear(res[c][0][i], 1e-5, 1e-6));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("overlapped backward equals the plain reduce bit for bit with 2 ranks, any plan",
          "[optim]") {
  for (const bool dyadic : {true, false}) {
    for (const LossReduction reduction : {LossReduction::Mean, LossReduction::Sum}) {
      for (const DType dtype : {DType::F32, DType::F64}) {
        if (!dyadic && reduction == LossReduction::Sum) continue;  // kept short: Mean covers it
        INFO((dyadic ? "dyadic" : "random")
             << " data, " << (reduction == LossReduction::Mean ? "mean" : "sum") << " loss, "
             << dtype);
        auto out = run_group(2, [&](Communicator& comm) {
          return plain_and_overlapped(comm, dyadic, reduction, dtype);
        });
        require_equal_everywhere(out);
      }
    }
  }
}

TEST_CASE(
    "without exact buckets one bucket still equals the plain reduce bit for bit at 3 and 4 "
    "ranks, the others to rounding",
    "[optim]") {
  for (const int world : {3, 4}) {
    INFO(world << " ranks");
    auto out = run_group(world, [](Communicator& comm) {
      return plain_and_overlapped(comm, /*dyadic=*/false, LossReduction::Mean, DType::F32,
                                  /*exact_buckets=*/false);
    });
    require_equal_everywhere(out, /*every_plan=*/false);
  }
}

TEST_CASE("overlapped backward equals the plain reduce bit for bit over the ring and the tree",
          "[optim]") {
  // In process Auto picks the direct algorithm; the ring (in segments smaller than a chunk, so
  // uneven window chunks end in empty segments) and the tree honour fold windows too.
  for (const Algorithm algorithm : {Algorithm::Ring, Algorithm::Tree}) {
    for (const int world : {3, 4}) {
      INFO(algorithm_name(algorithm) << ", " << world << " ranks");
      CommunicatorOptions options;
      options.all_reduce_algorithm = algorithm;
      options.segment_bytes = 64;
      auto out = run_group(
          world,
          [&](Communicator& comm) {
            return plain_and_overlapped(comm, /*dyadic=*/false, LossReduction::Mean, DType::F32);
          },
          options);
      require_equal_everywhere(out);
    }
  }
}

TEST_CASE("overlapped backward equals the plain reduce bit for bit at 3 and 4 ranks, any plan",
          "[optim]") {
  // Random data, so that the ranks' partial sums would round differently in another fold order.
  for (const int world : {3, 4}) {
    for (const LossReduction reduction : {LossReduction::Mean, LossReduction::Sum}) {
      for (const DType dtype : {DType::F32, DType::F64}) {
        INFO(world << " ranks, " << (reduction == LossReduction::Mean ? "mean" : "sum") << " loss, "
                   << dtype);
        auto out = run_group(world, [&](Communicator& comm) {
          return plain_and_overlapped(comm, /*dyadic=*/false, reduction, dtype);
        });
        require_equal_everywhere(out);
      }
    }
  }
}

TEST_CASE(
    "overlapped backward over TCP and shared memory equals the plain reduce bit for bit at 2, 3 "
    "and 4 ranks",
    "[optim]") {
  for (const auto& make : {ruccl::testing::GroupFactory(ruccl::testing::TcpLoopback::make),
                           ruccl::testing::GroupFactory(ruccl::testing::TcpSharedMemory::make)}) {
    auto out = run_group_with(make, 2, [](Communicator& comm) {
      return plain_and_overlapped(comm, /*dyadic=*/false, LossReduction::Mean, DType::F32);
    });
    require_equal_everywhere(out);
    for (const int world : {3, 4}) {
      INFO(world << " ranks");
      auto more = run_group_with(make, world, [](Communicator& comm) {
        return plain_and_overlapped(comm, /*dyadic=*/false, LossReduction::Mean, DType::F64);
      });
      require_equal_everywhere(more);
    }
  }
}

TEST_CASE("without overlap DataParallel::backward is backward then reduce", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    auto mlp = make_mlp(3);
    nn::Sequential& model = *mlp;
    DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = false});
    const auto [x, y] = batch(comm.rank(), 1, false, DType::F32);
    GradientsParams g = dp.backward(model, nn::mse_loss(model.forward(Var(x)), Var(y)),
                                    static_cast<double>(x.size(0)), LossReduction::Mean);
    GradientsParams plain = dp.reduce(model, GradientsParams::from_module(model),
                                      static_cast<double>(x.size(0)), LossReduction::Mean);
    return std::make_pair(*g.get(1), *plain.get(1));
  });
  for (int r = 0; r < 2; ++r) {
    REQUIRE_THAT(out[r].value().first, TensorEqual(out[r].value().second));
  }
}

TEST_CASE("a parameter backward never reached is one error on every rank naming it", "[optim]") {
  for (const std::int64_t cap : {16, 1 << 20}) {  // "b" in its own bucket, or with "a"
    INFO("bucket cap " << cap);
    auto out = run_group(3, [&](Communicator& comm) {
      ParamBag model = branchy_model();
      DataParallel dp = DataParallel::initialize(
          comm, model, 0,
          {.overlap = true, .bucket_cap_bytes = cap, .first_bucket_cap_bytes = cap});
      dp.backward(model, branchy_loss(model, comm.rank(), 1), 2.0, LossReduction::Sum);
    });
    for (int r = 0; r < 3; ++r) {
      INFO("rank " << r << ": " << out[r].message());
      REQUIRE_FALSE(out[r].ok());
      CHECK(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
      CHECK_THAT(out[r].message(), Catch::Contains("'b' (ParamId 2, on 1 rank(s))"));
      CHECK_THAT(out[r].message(), Catch::Contains("MissingGradientPolicy::Zero"));
      CHECK(out[r].message() == out[0].message());
    }
  }
}

TEST_CASE("MissingGradientPolicy::Zero counts an unreached parameter as zeros, as reduce does",
          "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    ParamBag model = branchy_model();
    DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = true});
    GradientsParams g = dp.backward(model, branchy_loss(model, comm.rank(), 1), 2.0,
                                    LossReduction::Sum, MissingGradientPolicy::Zero);
    model.zero_grad();
    branchy_loss(model, comm.rank(), 1).backward();
    GradientsParams plain = dp.reduce(model, GradientsParams::from_module(model), 2.0,
                                      LossReduction::Sum, MissingGradientPolicy::Zero);
    return std::vector<Tensor>{*g.get(1), *g.get(2), *plain.get(1), *plain.get(2)};
  });
  for (int r = 0; r < 2; ++r) {
    const auto& v = out[r].value();
    REQUIRE_THAT(v[0], TensorEqual(v[2]));
    REQUIRE_THAT(v[1], TensorEqual(v[3]));
    // b: rank 0's gradient (x = 1: column sums 2) over the total weight 4; rank 1 gave zeros.
    REQUIRE_THAT(v[1], TensorEqual(Tensor::full({2, 2}, 0.5)));
  }
}

TEST_CASE("a bad local weight in overlapped backward is one error on every rank", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    auto mlp = make_mlp(3);
    nn::Sequential& model = *mlp;
    DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = true});
    const auto [x, y] = batch(comm.rank(), 1, false, DType::F32);
    dp.backward(model, nn::mse_loss(model.forward(Var(x)), Var(y)), comm.rank() == 1 ? -1.0 : 1.0,
                LossReduction::Mean);
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
    CHECK_THAT(out[r].message(),
               Catch::Contains("rank 1: expected a finite local weight >= 0, got -1"));
    CHECK(out[r].message() == out[0].message());
  }
}

TEST_CASE("the last micro-batch's overlapped backward equals accumulate then reduce", "[optim]") {
  // Three micro-batches per rank (weights 1..3 + rank); the parameter "b" is used only in the
  // first one (an unused-parameter check must look at the whole window, pytorch#69031).
  auto out = run_group(2, [](Communicator& comm) {
    std::vector<std::vector<Tensor>> res(2);
    for (int mode = 0; mode < 2; ++mode) {
      ParamBag model = branchy_model();
      DataParallel dp = DataParallel::initialize(
          comm, model, 0,
          {.overlap = mode == 1, .bucket_cap_bytes = 16, .first_bucket_cap_bytes = 16});
      GradientsAccumulator acc;
      for (int k = 0; k < 2; ++k) {
        model.zero_grad();
        branchy_loss(model, comm.rank() + k, k == 0 ? -1 : comm.rank() + k).backward();
        acc.accumulate(GradientsParams::from_module(model), 1.0 + k + comm.rank(),
                       LossReduction::Mean);
      }
      model.zero_grad();
      Var last = branchy_loss(model, comm.rank() + 2, comm.rank() + 2);  // "b" unused
      GradientsParams g;
      if (mode == 0) {
        last.backward();
        acc.accumulate(GradientsParams::from_module(model), 3.0 + comm.rank(), LossReduction::Mean);
        g = dp.reduce(model, acc.take());
      } else {
        g = dp.backward(model, last, 3.0 + comm.rank(), LossReduction::Mean, acc.take());
      }
      res[mode] = {*g.get(1), *g.get(2)};
    }
    return res;
  });
  for (int r = 0; r < 2; ++r) {
    const auto& v = out[r].value();
    REQUIRE_THAT(v[1][0], TensorEqual(v[0][0]));
    REQUIRE_THAT(v[1][1], TensorEqual(v[0][1]));
  }
}

TEST_CASE("a rank with no data passes an undefined loss and weight 0 in both modes", "[optim]") {
  for (const bool overlap : {false, true}) {
    INFO("overlap " << overlap);
    auto out = run_group(2, [&](Communicator& comm) {
      ParamBag model = branchy_model();
      DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = overlap});
      const Var loss = comm.rank() == 0 ? branchy_loss(model, 0, -1) : Var();
      GradientsParams g =
          dp.backward(model, loss, comm.rank() == 0 ? 2.0 : 0.0, LossReduction::Sum);
      return *g.get(2);
    });
    for (int r = 0; r < 2; ++r) {
      // Rank 0's gradient of b (x = 1: column sums 2) over the total weight 2.
      REQUIRE_THAT(out[r].value(), TensorEqual(Tensor::full({2, 2}, 1.0)));
    }
  }
}

TEST_CASE("a bucket starts while backward still runs, buckets in plan order", "[optim]") {
  // loss = sum(all_reduce_sum(x·w1)·w2): backward finishes w2 (bucket 0), then runs the
  // differentiable all_reduce's backward collective, then finishes w1 (bucket 1). Calls are
  // numbered in the order a rank starts them, so bucket 0 must come before that collective.
  auto out = run_group(2, [](Communicator& comm) {
    ParamBag model(
        {{"w1", nn::Param(1, Tensor::ones({2, 2}))}, {"w2", nn::Param(2, Tensor::ones({2, 2}))}});
    DataParallel dp = DataParallel::initialize(
        comm, model, 0, {.overlap = true, .bucket_cap_bytes = 16, .first_bucket_cap_bytes = 16});
    comm.trace().enable();
    const Tensor x = Tensor::full({2, 2}, 1.0 + comm.rank());
    const Var h = autodiff::collective::all_reduce_sum(
        autodiff::matmul(Var(x), model.param("w1").var()), comm);
    dp.backward(model, autodiff::sum(autodiff::matmul(h, model.param("w2").var())), 2.0,
                LossReduction::Sum);
    std::vector<TraceEvent> events = comm.trace().events();
    std::sort(events.begin(), events.end(),
              [](const TraceEvent& a, const TraceEvent& b) { return a.seq < b.seq; });
    std::vector<std::string> calls;
    for (const TraceEvent& e : events) {
      if (e.type == TraceEventType::Collective) {
        calls.push_back(str(e.name, e.kind == OpKind::AllGather ? " all_gather" : ""));
      }
    }
    return calls;
  });
  const std::vector<std::string> expected = {
      "all_reduce_sum",                     // forward
      "DataParallel::backward all_gather",  // the weights, before backward
      "DataParallel::backward",             // bucket 0 = [w2], during backward
      "backward of all_reduce_sum",         // backward's own collective
      "DataParallel::backward"};            // bucket 1 = [w1]
  for (int r = 0; r < 2; ++r) REQUIRE(out[r].value() == expected);
}

TEST_CASE("a backward that throws on one rank fails every rank, none hangs", "[optim]") {
  auto out = run_group(2, [](Communicator& comm) {
    ParamBag model = branchy_model();
    DataParallel dp = DataParallel::initialize(
        comm, model, 0, {.overlap = true, .bucket_cap_bytes = 16, .first_bucket_cap_bytes = 16});
    const Tensor x = Tensor::full({2, 2}, 1.0);
    const Var product = autodiff::matmul(Var(x), model.param("a").var()) +
                        autodiff::matmul(Var(x), model.param("b").var());
    // Rank 1's loss is not one element: its backward throws before any gradient is final.
    const Var loss = comm.rank() == 0 ? autodiff::sum(product) : product;
    dp.backward(model, loss, 1.0, LossReduction::Sum);
  });
  INFO("rank 0: " << out[0].message() << "\nrank 1: " << out[1].message());
  REQUIRE(error_kind(out[0]) == CollectiveErrorKind::InvalidArgument);
  CHECK_THAT(out[0].message(), Catch::Contains("'b' (ParamId 2, on 1 rank(s)), 'a' (ParamId 1"));
  REQUIRE_FALSE(out[1].ok());
  CHECK_THAT(out[1].message(), Catch::Contains("backward: a root that is not a single element"));
}
