// ZeRO checkpoints (optim/zero_checkpoint.h): each rank writes its shard, nothing gathered; the
// checkpoint resumes bit for bit at the same world size, reshards 4 -> 2 -> 1 and 2 -> 4 (the
// optimizer state read back equals the state gathered before the save, bit for bit), loads into
// plain DataParallel and consolidates; a missing or damaged rank file, a model or an optimizer
// that does not match fail on every rank naming the rank and the parameter.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "autodiff/nn/loss.h"
#include "optim/adam.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/sharded_checkpoint.h"
#include "optim/data_parallel.h"
#include "optim/zero_checkpoint.h"
#include "tests/optim/scratch_dir.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::optim::test_support::ScratchDir;
using ruccl::testing::run_group;
using test_support::make_mlp;

namespace {

std::string tensor_bytes(const Tensor& t) {
  const auto bytes = ruccl::testing::tensor_bytes(t);
  return std::string(bytes.begin(), bytes.end());
}

/// One step of the MLP on rank r's batch of step s (r + 1 samples), as plain (0) or ZeRO.
void train_step(DataParallel& dp, nn::Module& model, Optimizer& opt, int step) {
  Generator gen(900 + 31 * dp.rank() + step);
  const std::int64_t n = dp.rank() + 1;
  const Tensor x = Tensor::randn({n, 5}, gen), y = Tensor::randn({n, 3}, gen);
  model.zero_grad();
  const Var loss = nn::mse_loss(model.forward(Var(x)), Var(y), nn::Reduction::Sum);
  const auto w = static_cast<double>(n);
  if (dp.options().zero_stage == 2) {
    dp.step(opt, 0.01, model, dp.backward_shard(model, loss, w, LossReduction::Sum));
  } else {
    dp.step(opt, 0.01, model, dp.backward(model, loss, w, LossReduction::Sum));
  }
}

DataParallel make_dp(Communicator& comm, nn::Module& model, int zero) {
  // 64-byte buckets, as zero_test: chunks cut parameters in the middle.
  return DataParallel::initialize(
      comm, model, 0, {.bucket_cap_bytes = 64, .first_bucket_cap_bytes = 64, .zero_stage = zero});
}

std::vector<std::string> param_bytes(const nn::Module& model) {
  std::vector<std::string> out;
  for (const nn::Param& p : model.parameters()) out.push_back(tensor_bytes(p.value()));
  return out;
}

/// ParamId -> steps and each buffer's bytes of a whole state.
std::map<ParamId, std::vector<std::string>> state_bytes(const OptimizerState& state) {
  std::map<ParamId, std::vector<std::string>> out;
  for (const auto& [id, slot] : state.slots) {
    out[id].push_back(std::to_string(slot.steps));
    for (const TensorBlob& b : slot.buffers) {
      const Tensor t = b.to_tensor();
      out[id].push_back(tensor_bytes(t.contiguous().view(Shape{t.numel()})));
    }
  }
  return out;
}

/// What a rank saw after a save (trained `steps` steps at `zero`) or a load.
struct Seen {
  std::vector<std::string> params;
  std::map<ParamId, std::vector<std::string>> state;  // gathered whole
  std::int64_t own_state_elements = 0;
  std::int64_t step = -1;
};

std::int64_t state_elements(const Optimizer& opt) {
  std::int64_t n = 0;
  for (const auto& [id, slot] : opt.state().slots) {
    for (const TensorBlob& b : slot.buffers) n += b.to_tensor().numel();
  }
  return n;
}

/// Trains 2 steps on `world` ranks at `zero` and saves into `dir`; what rank 0 holds then.
Seen save_run(int world, int zero, const std::filesystem::path& dir) {
  auto out = run_group(world, [&](Communicator& comm) {
    auto mlp = make_mlp(3);
    DataParallel dp = make_dp(comm, *mlp, zero);
    Adam adam;
    for (int s = 0; s < 2; ++s) train_step(dp, *mlp, adam, s);
    Seen seen;
    seen.own_state_elements = state_elements(adam);
    save_zero_checkpoint(dp, dir, adam, *mlp, {.step = 2});
    seen.params = param_bytes(*mlp);
    dp.gather_optimizer_state(adam, *mlp);
    seen.state = state_bytes(adam.state());
    return seen;
  });
  return out[0].value();
}

/// Loads `dir` on `world` ranks at `zero`; what each rank holds (state gathered whole).
std::vector<Seen> load_run(int world, int zero, const std::filesystem::path& dir) {
  auto out = run_group(world, [&](Communicator& comm) {
    auto mlp = make_mlp(11);  // other values: the load must replace them
    DataParallel dp = make_dp(comm, *mlp, zero);
    Adam adam;
    Seen seen;
    seen.step = load_zero_checkpoint(dp, dir, adam, *mlp).step;
    seen.own_state_elements = state_elements(adam);
    seen.params = param_bytes(*mlp);
    dp.gather_optimizer_state(adam, *mlp);
    seen.state = state_bytes(adam.state());
    return seen;
  });
  std::vector<Seen> seen;
  for (auto& o : out) seen.push_back(o.value());
  return seen;
}

void require_same(const Seen& saved, const std::vector<Seen>& loaded) {
  for (std::size_t r = 0; r < loaded.size(); ++r) {
    INFO("rank " << r << " of " << loaded.size());
    REQUIRE(loaded[r].step == 2);
    REQUIRE(loaded[r].params == saved.params);
    REQUIRE(loaded[r].state == saved.state);
  }
}

}  // namespace

TEST_CASE("a ZeRO checkpoint resumes bit for bit at the same world size", "[optim][zero]") {
  for (int zero : {1, 2}) {
    INFO("ZeRO-" << zero);
    const ScratchDir dir;
    auto out = run_group(3, [&](Communicator& comm) {
      auto mlp = make_mlp(3);
      DataParallel dp = make_dp(comm, *mlp, zero);
      Adam adam;
      std::vector<std::string> resumed;
      for (int s = 0; s < 4; ++s) {
        if (s == 2) {
          save_zero_checkpoint(dp, dir.path(), adam, *mlp, {.step = s});
          auto fresh = make_mlp(5);
          DataParallel fresh_dp = make_dp(comm, *fresh, zero);
          Adam fresh_adam;
          RUCCL_RANK_CHECK(load_zero_checkpoint(fresh_dp, dir.path(), fresh_adam, *fresh).step ==
                           2);
          for (int t = 2; t < 4; ++t) train_step(fresh_dp, *fresh, fresh_adam, t);
          resumed = param_bytes(*fresh);
        }
        train_step(dp, *mlp, adam, s);
      }
      RUCCL_RANK_CHECK(resumed == param_bytes(*mlp));
      return 0;
    });
    for (auto& o : out) REQUIRE(o.value() == 0);
  }
}

TEST_CASE("a ZeRO checkpoint writes shards and reshards 4 -> 2 -> 1 and 2 -> 4", "[optim][zero]") {
  const ScratchDir four, two, one;
  const Seen saved = save_run(4, 2, four.path());
  // Each rank wrote about a quarter of the state: 75 parameters, 2 Adam buffers.
  REQUIRE(saved.own_state_elements <= 2 * ((75 + 4 + 3) / 4));
  const ShardedCheckpoint ckpt = ShardedCheckpoint::open(four.path());
  REQUIRE(ckpt.world_size() == 4);
  REQUIRE(ckpt.info("exp_avg/0.weight").pieces.size() >= 2);  // cut between ranks

  const std::vector<Seen> on_two = load_run(2, 1, four.path());
  require_same(saved, on_two);
  REQUIRE(on_two[0].own_state_elements <= 2 * ((75 + 4 + 1) / 2));
  // 2 -> 1 (plain DataParallel, the whole state) through a checkpoint written on 2.
  run_group(2, [&](Communicator& comm) {
    auto mlp = make_mlp(11);
    DataParallel dp = make_dp(comm, *mlp, 1);
    Adam adam;
    load_zero_checkpoint(dp, four.path(), adam, *mlp);
    save_zero_checkpoint(dp, two.path(), adam, *mlp, {.step = 2});
    return 0;
  });
  require_same(saved, load_run(1, 0, two.path()));
  // 2 -> 4 and 2 -> 3 under ZeRO-2, and plain DataParallel on 2.
  require_same(saved, load_run(4, 2, two.path()));
  require_same(saved, load_run(3, 2, two.path()));
  require_same(saved, load_run(2, 0, two.path()));

  SECTION("consolidated, it is the unsharded state") {
    const auto whole = ShardedCheckpoint::open(two.path()).consolidate();
    std::map<ParamId, std::vector<std::string>> state;
    for (const nn::Param& p : make_mlp(3)->parameters()) {
      const auto path = [&] {
        for (const auto& [name, q] : make_mlp(3)->named_parameters()) {
          if (q.id() == p.id()) return name;
        }
        return std::string();
      }();
      state[p.id()] = {std::to_string(whole.at("steps/" + path).item<std::int64_t>()),
                       tensor_bytes(whole.at("exp_avg/" + path).view(Shape{p.numel()})),
                       tensor_bytes(whole.at("exp_avg_sq/" + path).view(Shape{p.numel()}))};
    }
    REQUIRE(state == saved.state);
  }
}

TEST_CASE("a ZeRO checkpoint with a missing or damaged shard fails on every rank naming it",
          "[optim][zero]") {
  const ScratchDir dir;
  save_run(3, 1, dir.path());
  std::filesystem::path rank1;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind("rank-1-of-3", 0) == 0) rank1 = e.path();
  }
  REQUIRE(!rank1.empty());
  const auto load_errors = [&](int world, auto&& make_optimizer) {
    auto out = run_group(world, [&](Communicator& comm) {
      auto mlp = make_mlp(11);
      DataParallel dp = make_dp(comm, *mlp, 2);
      auto opt = make_optimizer();
      const std::vector<std::string> before = param_bytes(*mlp);
      std::string message;
      try {
        load_zero_checkpoint(dp, dir.path(), opt, *mlp);
      } catch (const CheckpointError& e) {
        message = e.what();
      }
      RUCCL_RANK_CHECK(param_bytes(*mlp) == before);  // nothing changed
      return message;
    });
    std::vector<std::string> messages;
    for (auto& o : out) messages.push_back(o.value());
    return messages;
  };
  const auto adam = [] { return Adam(); };

  SECTION("another optimizer's hyper-parameters") {
    for (const std::string& m :
         load_errors(2, [] { return Adam(AdamOptions{.weight_decay = 0.5}); })) {
      CHECK_THAT(m, Catch::Contains("the optimizer") && Catch::Contains("weight_decay"));
    }
  }
  SECTION("a damaged rank file") {
    {
      std::fstream f(rank1, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(-9, std::ios::end);
      f.put('\x5a');
    }
    for (const std::string& m : load_errors(2, adam)) {
      CHECK_THAT(m, Catch::Contains("rank 1's shards") && Catch::Contains("parameter '"));
    }
  }
  SECTION("a missing rank file") {
    std::filesystem::remove(rank1);
    for (const std::string& m : load_errors(4, adam)) {
      CHECK_THAT(m, Catch::Contains("rank 1's shards") && Catch::Contains("parameter '") &&
                        Catch::Contains("ParamId"));
    }
  }
}
