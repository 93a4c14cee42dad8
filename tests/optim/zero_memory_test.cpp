// ZeRO's memory per rank, measured by the allocator (cpu::MemoryCounter, per rank thread): the
// optimizer state is 8 bytes per F32 element of the rank's shard (Adam's two moments) against
// plain's 8 per parameter element; ZeRO-2 holds 4 bytes per element of its chunk of gradients
// after the reduction against plain's 4Ψ (the parameters' gradients) + 8T (the packed buffer,
// kept for reuse, and the reduced one). docs/training.md, "ZeRO": the memory table.
#include <catch2/catch.hpp>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "optim/adam.h"
#include "optim/data_parallel.h"
#include "tensor/backend/cpu/cpu_memory_counter.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::run_group;

namespace {

/// Linear(64 -> 64), Tanh, Linear(64 -> 10): Ψ = 4810 F32 parameters in 4 tensors.
std::shared_ptr<nn::Sequential> model() {
  Generator gen(3);
  auto m = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(64, 64, gen), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(64, 10, gen)});
  m->assign_param_ids(1);
  return m;
}

struct Measured {
  std::int64_t state = 0;      // bytes the first optimizer step allocated and kept
  std::int64_t gradients = 0;  // bytes held once the reduction returned (loss graph dropped)
  std::int64_t shard_elements = 0;
  std::int64_t chunk_elements = 0;
  std::int64_t peak = 0;  // the most bytes held during the step, above what was held before it
};

Measured measure(Communicator& comm, int zero) {
  auto m = model();
  DataParallel dp = DataParallel::initialize(comm, *m, 0, {.zero_stage = zero});
  Adam adam;
  cpu::MemoryCounter counter;
  Generator gen(10 + comm.rank());
  const Tensor x = Tensor::randn({2, 64}, gen), y = Tensor::randn({2, 10}, gen);
  Measured out;
  const std::int64_t base = counter.bytes_in_use();
  GradientsParams full;
  GradientShard shard;
  {
    const Var loss = nn::mse_loss(m->forward(Var(x)), Var(y), nn::Reduction::Sum);
    if (zero == 2) {
      shard = dp.backward_shard(*m, loss, 2.0, LossReduction::Sum);
    } else {
      full = dp.backward(*m, loss, 2.0, LossReduction::Sum);
    }
  }
  // A collective's bookkeeping may hold its input views a moment after the call returned: one
  // more collective behind it lets them go.
  comm.barrier();
  out.gradients = counter.bytes_in_use() - base;
  const std::int64_t before_step = counter.bytes_in_use();
  if (zero == 2) {
    dp.step(adam, 0.01, *m, shard);
  } else {
    dp.step(adam, 0.01, *m, full);
  }
  comm.barrier();
  out.state = counter.bytes_in_use() - before_step;
  out.peak = counter.peak_bytes() - base;
  out.shard_elements = dp.shard().param_numel();
  for (const ShardRange& r : dp.shard().ranges()) out.chunk_elements += r.numel;
  return out;
}

}  // namespace

TEST_CASE("ZeRO's optimizer state and gradients per rank, measured by the allocator", "[optim]") {
  constexpr std::int64_t kPsi = 64 * 64 + 64 + 64 * 10 + 10;  // 4810
  constexpr std::int64_t kTotal = kPsi + 4;                   // + one flag word per parameter
  const int world = GENERATE(2, 3, 4);
  INFO("world " << world);
  std::vector<std::int64_t> plain_peak;  // by rank
  for (int zero : {0, 1, 2}) {
    INFO("zero " << zero);
    const auto out = run_group(world, [&](Communicator& c) { return measure(c, zero); });
    for (std::size_t r = 0; r < out.size(); ++r) {
      // Plain holds 4Ψ + 8T + 8Ψ at the end of its step, its peak; ZeRO-2's peak (the
      // autodiff gradients and the packed buffer during backward) stays below it.
      if (zero == 0) plain_peak.push_back(out[r].value().peak);
      if (zero == 0) REQUIRE(out[r].value().peak == 4 * kPsi + 8 * kTotal + 8 * kPsi);
      if (zero == 2) REQUIRE(out[r].value().peak < plain_peak[r]);
    }
    std::int64_t elements = 0;
    for (const auto& r : out) {
      const Measured& m = r.value();
      elements += m.shard_elements;
      if (zero == 0) {
        REQUIRE(m.state == 8 * kPsi);  // Adam: exp_avg and exp_avg_sq, F32
        REQUIRE(m.gradients == 4 * kPsi + 8 * kTotal);
      } else {
        REQUIRE(m.state == 8 * m.shard_elements);  // 8Ψ/W
        REQUIRE(m.shard_elements <= (kTotal + world - 1) / world);
      }
      if (zero == 1) REQUIRE(m.gradients == 4 * kPsi + 8 * kTotal);  // reduced as plain
      if (zero == 2) REQUIRE(m.gradients == 4 * m.chunk_elements);   // 4T/W
    }
    if (zero > 0) REQUIRE(elements == kPsi);
  }
}
