// DataParallel's ZeRO stages: ZeRO-1 (sharded optimizer state) and ZeRO-2 (sharded gradients too)
// step to the same bits as plain DataParallel at any world size, with Adam and SGD, overlapped or
// not, over several buckets, through accumulation windows, with frozen and tied parameters; the
// optimizer state is 1/W per rank and gathers to plain's bit for bit for a checkpoint.
#include <catch2/catch.hpp>

#include <functional>
#include <iostream>

#include "autodiff/nn/loss.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/reduce.h"
#include "optim/adam.h"
#include "optim/checkpoint/training_record.h"
#include "optim/clip_grad_norm.h"
#include "optim/data_parallel.h"
#include "optim/sgd.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::run_group;
using ruccl::testing::tensor_bytes;
using test_support::make_mlp;
using test_support::ParamBag;

namespace {

/// Rank r's batch of step s: r + 1 samples (uneven weights), random F32/F64 values.
std::pair<Tensor, Tensor> batch(int rank, int step, DType dtype) {
  Generator gen(500 + 31 * rank + step);
  const std::int64_t n = rank + 1;
  return {Tensor::randn({n, 5}, gen, dtype), Tensor::randn({n, 3}, gen, dtype)};
}

/// How one run steps.
struct Run {
  int zero = 0;
  bool overlap = false;
  int accumulate = 1;  // micro-batches per step (no_sync for all but the last)
  std::string optimizer = "adam";
  bool clip = false;  // DataParallel::clip_grad_norm_ to 0.05 before each step (it does clip)
};

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind) {
  if (kind == "sgd") return std::make_unique<Sgd>(SgdOptions{.momentum = 0.9});
  return std::make_unique<Adam>(AdamOptions{});
}

/// Three steps of the MLP on this rank; the final parameters in visit order. The norms clipped
/// (Run::clip) are appended to `clipped_norms`.
std::vector<Tensor> train(Communicator& comm, const Run& run, DType dtype = DType::F32,
                          std::vector<double>* norms = nullptr) {
  std::vector<double> own_norms;
  std::vector<double>& clipped_norms = norms != nullptr ? *norms : own_norms;
  auto mlp = make_mlp(7, dtype);
  nn::Sequential& model = *mlp;
  // 64-byte buckets: 4 buckets whose edges fall inside the ranks' chunks.
  DataParallel dp = DataParallel::initialize(comm, model, 0,
                                             {.overlap = run.overlap,
                                              .bucket_cap_bytes = 64,
                                              .first_bucket_cap_bytes = 64,
                                              .zero_stage = run.zero});
  auto opt = make_optimizer(run.optimizer);
  for (int step = 0; step < 3; ++step) {
    const auto [x, y] = batch(comm.rank(), step, dtype);
    const std::int64_t n = x.size(0);
    const auto loss_of = [&, x = x, y = y](int k) {
      const std::int64_t lo = n * k / run.accumulate, hi = n * (k + 1) / run.accumulate;
      if (hi == lo) return Var();
      return nn::mse_loss(model.forward(Var(x.narrow(0, lo, hi - lo))),
                          Var(y.narrow(0, lo, hi - lo)), nn::Reduction::Sum);
    };
    const auto weight = [&](int k) {
      return static_cast<double>(n * (k + 1) / run.accumulate - n * k / run.accumulate);
    };
    model.zero_grad();
    for (int k = 0; k + 1 < run.accumulate; ++k) {
      dp.no_sync(model, loss_of(k), weight(k), LossReduction::Sum);
    }
    const int last = run.accumulate - 1;
    if (run.zero == 2) {
      GradientShard g = dp.backward_shard(model, loss_of(last), weight(last), LossReduction::Sum);
      if (run.clip) clipped_norms.push_back(dp.clip_grad_norm_(g, 0.05));
      dp.step(*opt, 0.01, model, g);
    } else {
      GradientsParams g = dp.backward(model, loss_of(last), weight(last), LossReduction::Sum);
      if (run.clip) clipped_norms.push_back(dp.clip_grad_norm_(model, g, 0.05));
      dp.step(*opt, 0.01, model, g);
    }
  }
  std::vector<Tensor> out;
  for (const nn::Param& p : model.parameters()) out.push_back(p.value().clone());
  return out;
}

/// Every rank's parameters of `run` equal rank 0's of `plain`, byte for byte.
void require_same_bits(const std::vector<testing::RankOutcome<std::vector<Tensor>>>& plain,
                       const std::vector<testing::RankOutcome<std::vector<Tensor>>>& run) {
  for (std::size_t r = 0; r < run.size(); ++r) {
    INFO("rank " << r);
    REQUIRE(run[r].value().size() == plain[0].value().size());
    for (std::size_t i = 0; i < run[r].value().size(); ++i) {
      INFO("parameter " << i);
      REQUIRE(tensor_bytes(run[r].value()[i]) == tensor_bytes(plain[0].value()[i]));
    }
  }
}

}  // namespace

TEST_CASE("ZeRO-1 and ZeRO-2 step to plain DataParallel's bits at 2, 3 and 4 ranks", "[optim]") {
  const int world = GENERATE(2, 3, 4);
  const std::string optimizer = GENERATE("adam", "sgd");
  INFO("world " << world << ", " << optimizer);
  const auto plain = run_group(
      world, [&](Communicator& c) { return train(c, Run{.zero = 0, .optimizer = optimizer}); });
  for (const Run& run :
       {Run{.zero = 1, .optimizer = optimizer}, Run{.zero = 2, .optimizer = optimizer},
        Run{.zero = 2, .overlap = true, .optimizer = optimizer},
        Run{.zero = 1, .overlap = true, .optimizer = optimizer}}) {
    INFO("zero " << run.zero << (run.overlap ? " overlapped" : ""));
    require_same_bits(plain, run_group(world, [&](Communicator& c) { return train(c, run); }));
  }
}

TEST_CASE("DataParallel::clip_grad_norm_ clips plain, ZeRO-1 and ZeRO-2 to the same bits",
          "[optim]") {
  const int world = GENERATE(2, 3, 4);
  INFO("world " << world);
  std::vector<std::vector<double>> norms(static_cast<std::size_t>(world));
  const auto plain = run_group(world, [&](Communicator& c) {
    return train(c, Run{.clip = true}, DType::F32, &norms[static_cast<std::size_t>(c.rank())]);
  });
  for (double n : norms[0]) REQUIRE(n > 0.05);  // every step was clipped
  REQUIRE(norms[0].size() == 3);
  for (const Run& run : {Run{.zero = 1, .clip = true}, Run{.zero = 2, .clip = true},
                         Run{.zero = 2, .overlap = true, .clip = true}}) {
    INFO("zero " << run.zero << (run.overlap ? " overlapped" : ""));
    std::vector<std::vector<double>> got(static_cast<std::size_t>(world));
    require_same_bits(plain, run_group(world, [&](Communicator& c) {
                        return train(c, run, DType::F32, &got[static_cast<std::size_t>(c.rank())]);
                      }));
    for (const auto& g : got) REQUIRE(g == norms[0]);  // the same norms, bit for bit
  }
}

TEST_CASE("ZeRO-2 reduces a no_sync window to plain's bits, overlapped or not, F32, F64, BF16",
          "[optim]") {
  const DType dtype = GENERATE(DType::F32, DType::F64, DType::BF16);
  const int world = 3;
  const auto plain =
      run_group(world, [&](Communicator& c) { return train(c, Run{.accumulate = 2}, dtype); });
  for (bool overlap : {false, true}) {
    INFO("overlap " << overlap << " " << dtype);
    require_same_bits(plain, run_group(world, [&](Communicator& c) {
                        return train(c, Run{.zero = 2, .overlap = overlap, .accumulate = 2}, dtype);
                      }));
  }
}

TEST_CASE("ZeRO steps frozen and tied parameters as plain DataParallel does", "[optim]") {
  // "a" is used twice in the forward and registered under two paths (tied); "f" is frozen.
  const auto run = [](Communicator& comm, int zero) {
    nn::Param a(1, Tensor::full({3, 2}, 0.5)), f(3, Tensor::full({2, 2}, 2.0), false);
    nn::Param b(2, Tensor::full({2}, -0.25));
    ParamBag model({{"a", a}, {"f", f}, {"b", b}, {"a_again", a}});
    DataParallel dp = DataParallel::initialize(
        comm, model, 0, {.overlap = zero == 2, .bucket_cap_bytes = 8, .zero_stage = zero});
    Adam adam;
    for (int step = 0; step < 2; ++step) {
      model.zero_grad();
      const auto [x, y] = batch(comm.rank(), step, DType::F32);
      const Var h = autodiff::matmul(Var(x.narrow(1, 0, 3)), a.var());
      const Var loss = autodiff::sum(autodiff::matmul(h, f.var()) * h + b.var());
      const double w = static_cast<double>(x.size(0));
      if (zero == 2) {
        dp.step(adam, 0.1, model, dp.backward_shard(model, loss, w, LossReduction::Sum));
      } else {
        dp.step(adam, 0.1, model, dp.backward(model, loss, w, LossReduction::Sum));
      }
    }
    return std::vector<Tensor>{a.value().clone(), b.value().clone(), f.value().clone()};
  };
  const auto plain = run_group(3, [&](Communicator& c) { return run(c, 0); });
  REQUIRE(tensor_bytes(plain[0].value()[2]) == tensor_bytes(Tensor::full({2, 2}, 2.0)));
  require_same_bits(plain, run_group(3, [&](Communicator& c) { return run(c, 1); }));
  require_same_bits(plain, run_group(3, [&](Communicator& c) { return run(c, 2); }));
}

TEST_CASE("ZeRO shards tile the model: the ranks' pieces cover every element once", "[optim]") {
  auto mlp = make_mlp(7);
  const BucketPlan whole = BucketPlan::whole(*mlp);
  for (int world : {1, 2, 3, 4, 5, 8, 100}) {
    INFO("world " << world);
    std::map<ParamId, std::vector<int>> covered;
    std::int64_t total = 0;
    for (const auto& [path, p] : mlp->named_parameters()) {
      covered[p.id()].assign(static_cast<std::size_t>(p.numel()), 0);
    }
    for (int r = 0; r < world; ++r) {
      const ZeroShard shard = ZeroShard::of(whole, r, world);
      total += shard.param_numel();
      for (const ShardRange& range : shard.ranges()) {
        REQUIRE(range.numel <= range.padded);
        for (const ShardPiece& piece : range.pieces) {
          REQUIRE(piece.offset + piece.numel <= range.numel);
          for (std::int64_t i = piece.begin; i < piece.begin + piece.numel; ++i) {
            ++covered[piece.id][static_cast<std::size_t>(i)];
          }
        }
      }
    }
    REQUIRE(total == 75);
    for (const auto& [id, counts] : covered) {
      for (int c : counts) REQUIRE(c == 1);
    }
  }
}

TEST_CASE("ZeRO keeps 1/W of the optimizer state and gathers it to plain's bits", "[optim]") {
  const int world = 3;
  // [0] plain's state, [1] the gathered ZeRO-2 state; then the ZeRO rank's own state elements.
  struct Out {
    OptimizerState plain, gathered;
    std::int64_t own_elements = 0;
    std::vector<Tensor> resumed, uninterrupted;
  };
  const auto out = run_group(world, [&](Communicator& comm) {
    Out o;
    std::vector<std::shared_ptr<nn::Sequential>> models;
    for (int zero : {0, 2}) {
      auto mlp = make_mlp(7);
      DataParallel dp = DataParallel::initialize(comm, *mlp, 0, {.zero_stage = zero});
      Adam adam;
      std::optional<TrainingRecord> record;
      for (int step = 0; step < 3; ++step) {
        if (zero == 2 && step == 2) {  // a checkpoint before the last step, restored at once
          dp.gather_optimizer_state(adam, *mlp);
          record = TrainingRecord::capture(*mlp, &adam);
          auto fresh = make_mlp(1);
          Adam fresh_adam;
          record->restore(*fresh, &fresh_adam);
          DataParallel fresh_dp = DataParallel::initialize(comm, *fresh, 0, {.zero_stage = zero});
          const auto [x, y] = batch(comm.rank(), step, DType::F32);
          const Var loss = nn::mse_loss(fresh->forward(Var(x)), Var(y), nn::Reduction::Sum);
          fresh_dp.step(fresh_adam, 0.01, *fresh,
                        fresh_dp.backward_shard(*fresh, loss, static_cast<double>(x.size(0)),
                                                LossReduction::Sum));
          for (const nn::Param& p : fresh->parameters()) o.resumed.push_back(p.value().clone());
        }
        const auto [x, y] = batch(comm.rank(), step, DType::F32);
        mlp->zero_grad();
        const Var loss = nn::mse_loss(mlp->forward(Var(x)), Var(y), nn::Reduction::Sum);
        const double w = static_cast<double>(x.size(0));
        if (zero == 2) {
          dp.step(adam, 0.01, *mlp, dp.backward_shard(*mlp, loss, w, LossReduction::Sum));
        } else {
          dp.step(adam, 0.01, *mlp, dp.backward(*mlp, loss, w, LossReduction::Sum));
        }
      }
      if (zero == 0) {
        o.plain = adam.state();
        for (const nn::Param& p : mlp->parameters()) o.uninterrupted.push_back(p.value().clone());
      } else {
        for (const auto& [id, slot] : adam.state().slots) {
          o.own_elements += slot.buffers.at(0).to_tensor().numel();
        }
        dp.gather_optimizer_state(adam, *mlp);
        o.gathered = adam.state();
      }
    }
    return o;
  });
  std::int64_t elements = 0;
  for (int r = 0; r < world; ++r) {
    const Out& o = out[static_cast<std::size_t>(r)].value();
    INFO("rank " << r);
    elements += o.own_elements;
    REQUIRE(o.own_elements <= (75 + 4 + world - 1) / world);  // its chunk of 79 words
    REQUIRE(o.gathered.slots.size() == o.plain.slots.size());
    for (const auto& [id, slot] : o.plain.slots) {
      INFO("ParamId " << id);
      const ParamSlotState& g = o.gathered.slots.at(id);
      REQUIRE(g.steps == slot.steps);
      for (std::size_t b = 0; b < slot.buffers.size(); ++b) {
        REQUIRE(tensor_bytes(g.buffers[b].to_tensor()) ==
                tensor_bytes(slot.buffers[b].to_tensor()));
      }
    }
    for (std::size_t i = 0; i < o.resumed.size(); ++i) {
      REQUIRE(tensor_bytes(o.resumed[i]) == tensor_bytes(o.uninterrupted[i]));
    }
  }
  REQUIRE(elements == 75);  // every element's state on exactly one rank
}

TEST_CASE("ZeRO's wrong stage and calls are clear errors", "[optim]") {
  const auto bad = run_group(2, [](Communicator& comm) {
    auto mlp = make_mlp(7);
    DataParallel::initialize(comm, *mlp, 0, {.zero_stage = 3});
  });
  for (const auto& r : bad) {
    REQUIRE_THAT(r.message(), Catch::Contains("zero_stage 0, 1 or 2, got 3"));
  }
  const auto differ = run_group(2, [](Communicator& comm) {
    auto mlp = make_mlp(7);
    DataParallel::initialize(comm, *mlp, 0, {.zero_stage = comm.rank()});
  });
  for (const auto& r : differ) REQUIRE_THAT(r.message(), Catch::Contains("zero_stage"));
  const auto wrong_call = run_group(1, [](Communicator& comm) {
    auto mlp = make_mlp(7);
    DataParallel dp = DataParallel::initialize(comm, *mlp, 0, {.zero_stage = 1});
    dp.backward_shard(*mlp, Var(), 0.0, LossReduction::Sum);
  });
  REQUIRE_THAT(wrong_call[0].message(),
               Catch::Contains("backward_shard: expected DataParallelOptions::zero_stage >= 2, "
                               "got 1"));
  const auto plain_step = run_group(1, [](Communicator& comm) {
    auto mlp = make_mlp(7);
    DataParallel dp = DataParallel::initialize(comm, *mlp, 0);
    Adam adam;
    dp.step(adam, 0.1, *mlp, GradientShard{});
  });
  REQUIRE_THAT(plain_step[0].message(),
               Catch::Contains("step of a GradientShard: expected DataParallelOptions::zero_stage "
                               ">= 1, got 0"));
  // A shard's state (2 ranks) stepped on 3 ranks: neither the whole parameter nor the shard.
  OptimizerState two_rank_state;
  run_group(2,
            [&](Communicator& comm) {
              auto mlp = make_mlp(7);
              DataParallel dp = DataParallel::initialize(comm, *mlp, 0, {.zero_stage = 1});
              Adam adam;
              const auto [x, y] = batch(comm.rank(), 0, DType::F32);
              const Var loss = nn::mse_loss(mlp->forward(Var(x)), Var(y), nn::Reduction::Sum);
              dp.step(adam, 0.1, *mlp, dp.backward(*mlp, loss, 1.0, LossReduction::Sum));
              if (comm.rank() == 0) two_rank_state = adam.state();
            })[0]
      .value();
  const auto resharded = run_group(3, [&](Communicator& comm) {
    auto mlp = make_mlp(7);
    DataParallel dp = DataParallel::initialize(comm, *mlp, 0, {.zero_stage = 2});
    Adam adam;
    adam.load_state(two_rank_state);
    const auto [x, y] = batch(comm.rank(), 0, DType::F32);
    const Var loss = nn::mse_loss(mlp->forward(Var(x)), Var(y), nn::Reduction::Sum);
    dp.step(adam, 0.1, *mlp, dp.backward_shard(*mlp, loss, 1.0, LossReduction::Sum));
  });
  for (const auto& r : resharded) {  // every rank, naming the rank whose state does not fit
    REQUIRE_THAT(r.message(),
                 Catch::Contains("rank 1: DataParallel::step: the optimizer state of") &&
                     Catch::Contains("a state saved for another shard or world size"));
  }
}

TEST_CASE("ZeRO-2 clips the shards' gradients with one all_reduce of the squared norm", "[optim]") {
  // The squared norm of the shards, summed over the ranks, is the plain gradients' squared norm
  // (to F64 rounding: the terms are summed in another order, relative 1e-12 for 75 F32 squares).
  const auto out = run_group(3, [](Communicator& comm) {
    std::array<double, 2> norms{};
    for (int zero : {0, 2}) {
      auto mlp = make_mlp(7);
      DataParallel dp = DataParallel::initialize(comm, *mlp, 0, {.zero_stage = zero});
      const auto [x, y] = batch(comm.rank(), 0, DType::F32);
      const Var loss = nn::mse_loss(mlp->forward(Var(x)), Var(y), nn::Reduction::Sum);
      const double w = static_cast<double>(x.size(0));
      if (zero == 0) {
        GradientsParams g = dp.backward(*mlp, loss, w, LossReduction::Sum);
        norms[0] = clip_grad_norm_(g, 1e-3);
      } else {
        GradientShard g = dp.backward_shard(*mlp, loss, w, LossReduction::Sum);
        norms[1] = clip_grad_norm_(g.pieces, 1e-3, comm);
      }
    }
    return norms;
  });
  for (const auto& r : out) {
    REQUIRE(r.value()[1] == Approx(r.value()[0]).epsilon(1e-12));
    REQUIRE(r.value()[1] == out[0].value()[1]);  // the same on every rank
  }
}
