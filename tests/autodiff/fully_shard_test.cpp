// nn::fully_shard (autodiff/nn/fully_shard.h): the shard gradients the transpose of the gather
// delivers equal the sum of the ranks' unsharded gradients (the objective Σ_r L_r), for a module
// used twice in one forward, a parameter tied across two sharded modules, frozen parameters and
// padded shards, modules of mixed dtypes; ranks that call different modules fail together naming
// them; the gathered values are freed after forward and after the module's backward
// (cpu::MemoryCounter).
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/nn/fully_shard.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/sequential.h"
#include "collective/collective.h"
#include "tensor/backend/cpu/cpu_memory_counter.h"
#include "tensor/tensor.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::run_group;
using ruccl::testing::tensor_bytes;

namespace {

/// y = x · w with one parameter `w` (a Param given, so two of them can be tied).
class MatMul : public nn::Cloneable<MatMul> {
 public:
  explicit MatMul(nn::Param w) : w_(std::move(w)) { register_parameter("w", w_); }
  Var forward(const Var& x) override { return matmul(x, w_); }

 private:
  nn::Param w_;
};

/// This rank's input: [2, in] values that differ by rank.
Var rank_x(int rank, std::int64_t in, DType dtype = DType::F32) {
  Generator gen(40 + rank);
  return Var(Tensor::randn({2, in}, gen, dtype));
}

/// Rows [r·k, r·k + k) of `full`'s dim 0 zero-padded to k = ceil(d0 / W): rank r's shard.
Tensor shard_of(const Tensor& full, int rank, int world) {
  const std::int64_t rows = full.size(0), k = (rows + world - 1) / world;
  std::vector<std::int64_t> dims = full.shape().to_vector();
  dims[0] = k;
  Tensor out = Tensor::zeros(Shape(dims), full.dtype());
  const std::int64_t start = std::min<std::int64_t>(rank * k, rows);
  const std::int64_t length = std::min(rows, start + k) - start;
  if (length > 0) out.narrow(0, 0, length).copy_(full.narrow(0, start, length));
  return out;
}

/// The reference: every rank's unsharded gradients summed over the ranks, then this rank's
/// shard of each.
std::vector<Tensor> reference_shards(Communicator& comm, const std::vector<nn::Param>& params) {
  std::vector<Tensor> out;
  for (const nn::Param& p : params) {
    const Tensor sum = comm.all_reduce(p.grad(), ReduceOperation::Sum);
    out.push_back(shard_of(sum, comm.rank(), comm.world_size()));
  }
  return out;
}

/// Gradients of a sharded run and of the reference, per rank.
struct Grads {
  std::vector<Tensor> sharded, reference;
};

/// Bit for bit, except where a parameter is used twice: the sharded run reduces each use's
/// gradient and then adds the two (one reduce_scatter per gather), the reference adds them on
/// each rank first, so the sums round in another order (F32: 1e-6 relative, a few ulps).
void require_same(const std::vector<testing::RankOutcome<Grads>>& out, bool bitwise = true) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r);
    const Grads& g = out[r].value();
    REQUIRE(g.sharded.size() == g.reference.size());
    for (std::size_t i = 0; i < g.sharded.size(); ++i) {
      INFO("parameter " << i);
      REQUIRE(g.sharded[i].defined());
      REQUIRE(g.sharded[i].shape() == g.reference[i].shape());
      if (bitwise) {
        REQUIRE(tensor_bytes(g.sharded[i]) == tensor_bytes(g.reference[i]));
      } else {
        REQUIRE_THAT(g.sharded[i], testing::TensorNear(g.reference[i], 1e-6, 1e-7));
      }
    }
  }
}

}  // namespace

TEST_CASE("fully_shard: a module used twice in one forward gets the summed sharded gradient",
          "[autodiff][fully_shard]") {
  const int world = GENERATE(2, 3, 4);
  INFO("world " << world);
  // Linear(3 -> 3): dim 0 of 3 pads at 2 and 4 ranks (rank 3 of 4 holds only padding).
  const auto out = run_group(world, [](Communicator& comm) {
    Generator gen(5);
    auto plain = std::make_shared<nn::Linear>(3, 3, gen);
    auto copy = plain->clone_as<nn::Linear>();
    const Var x = rank_x(comm.rank(), 3);
    sum(tanh(plain->forward(tanh(plain->forward(x))))).backward();
    Grads g;
    g.reference = reference_shards(comm, plain->parameters());
    auto sharded = nn::fully_shard(copy, comm, "twice");
    sum(tanh(sharded->forward(tanh(sharded->forward(x))))).backward();
    for (const nn::Param& p : sharded->parameters()) g.sharded.push_back(p.grad());
    return g;
  });
  require_same(out, /*bitwise=*/false);
}

TEST_CASE("fully_shard: a parameter tied across two sharded modules is sharded once",
          "[autodiff][fully_shard]") {
  const auto out = run_group(2, [](Communicator& comm) {
    Generator gen(6);
    const Tensor w = Tensor::randn({5, 5}, gen);
    nn::Param tied(w.clone()), plain_tied(w.clone());
    const Var x = rank_x(comm.rank(), 5);
    auto a0 = std::make_shared<MatMul>(plain_tied), b0 = std::make_shared<MatMul>(plain_tied);
    sum(b0->forward(tanh(a0->forward(x)))).backward();
    Grads g;
    g.reference = reference_shards(comm, {plain_tied});
    auto shards = nn::ShardedParams::create(comm);
    auto a = nn::fully_shard(std::make_shared<MatMul>(tied), comm, "a", shards);
    auto b = nn::fully_shard(std::make_shared<MatMul>(tied), comm, "b", shards);
    RUCCL_RANK_CHECK(tied.shape() == Shape({3, 5}));  // one shard: [ceil(5 / 2), 5]
    RUCCL_RANK_CHECK(shards->full_shape(tied) == Shape({5, 5}));
    sum(b->forward(tanh(a->forward(x)))).backward();
    g.sharded.push_back(tied.grad());
    return g;
  });
  require_same(out, /*bitwise=*/false);
}

TEST_CASE("fully_shard: a frozen parameter is gathered for forward and gets no gradient",
          "[autodiff][fully_shard]") {
  const auto out = run_group(2, [](Communicator& comm) {
    Generator gen(7);
    auto plain = std::make_shared<nn::Linear>(4, 3, gen);
    auto copy = plain->clone_as<nn::Linear>();
    plain->bias().set_trainable(false);
    copy->bias().set_trainable(false);
    const Var x = rank_x(comm.rank(), 4);
    const Var y_plain = plain->forward(x);
    sum(tanh(y_plain)).backward();
    Grads g;
    g.reference = reference_shards(comm, {plain->weight()});
    auto sharded = nn::fully_shard(copy, comm, "frozen");
    const Var y = sharded->forward(x);
    RUCCL_RANK_CHECK(tensor_bytes(y.value()) == tensor_bytes(y_plain.value()));
    sum(tanh(y)).backward();
    RUCCL_RANK_CHECK(!(copy->bias().grad().defined()));
    g.sharded.push_back(copy->weight().grad());
    return g;
  });
  require_same(out);
}

TEST_CASE("fully_shard: ranks that call different modules fail together, naming the module",
          "[autodiff][fully_shard]") {
  const auto out = run_group(2, [](Communicator& comm) {
    Generator gen(8);
    auto shards = nn::ShardedParams::create(comm);
    // Same shapes: only the module's name in the fingerprint tells them apart.
    auto a = nn::fully_shard(std::make_shared<nn::Linear>(4, 4, gen), comm, "block_a", shards);
    auto b = nn::fully_shard(std::make_shared<nn::Linear>(4, 4, gen), comm, "block_b", shards);
    const Var x = rank_x(comm.rank(), 4);
    (comm.rank() == 0 ? a : b)->forward(x);
  });
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE_FALSE(out[r].ok());
    REQUIRE_THROWS_AS(std::rethrow_exception(out[r].error()), CollectiveError);
    REQUIRE_THAT(out[r].message(), Catch::Contains("fully_shard(block_"));
  }
}

TEST_CASE("fully_shard: a rank holds its shards plus the gathered module in flight",
          "[autodiff][fully_shard]") {
  // Four Linear(64 -> 64) blocks in F32 at 2 ranks: 16,640 bytes of parameters each, 8,320 per
  // shard. Batch 1 keeps activations (256 bytes a tensor) small beside them.
  constexpr std::int64_t kBlock = (64 * 64 + 64) * 4, kShard = kBlock / 2, kBlocks = 4;
  const auto out = run_group(2, [](Communicator& comm) {
    Generator gen(9);
    std::vector<std::shared_ptr<nn::Module>> blocks;
    auto shards = nn::ShardedParams::create(comm);
    cpu::MemoryCounter counter;
    for (int i = 0; i < kBlocks; ++i) {
      blocks.push_back(nn::fully_shard(std::make_shared<nn::Linear>(64, 64, gen), comm,
                                       "block" + std::to_string(i), shards));
    }
    nn::Sequential model(blocks);
    const std::int64_t base = counter.bytes_in_use();  // the shards (full values freed)
    counter.reset_peak();
    const Var x = rank_x(comm.rank(), 64);
    Var loss = sum(model.forward(x));
    const std::int64_t after_forward = counter.bytes_in_use() - base;
    const std::int64_t forward_peak = counter.peak_bytes() - base;
    loss.backward();
    loss = Var();
    const std::int64_t backward_peak = counter.peak_bytes() - base;
    const std::int64_t after_backward = counter.bytes_in_use() - base;  // the shard gradients
    return std::vector<std::int64_t>{base, after_forward, forward_peak, backward_peak,
                                     after_backward};
  });
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r);
    const std::vector<std::int64_t>& m = out[r].value();
    INFO("shards " << m[0] << ", after forward " << m[1] << ", forward peak " << m[2]
                   << ", backward peak " << m[3] << ", after backward " << m[4]);
    REQUIRE(m[0] == kBlocks * kShard);  // only the shards stay
    // Forward: the tape keeps no gathered value (the activations are 2 KiB in all) ...
    REQUIRE(m[1] < kBlock / 4);
    // ... and holds one gathered block at a time (+ activations).
    REQUIRE(m[2] < kBlock + kBlock / 4);
    // Backward: one gathered block, its full gradient and the shard gradients so far, never two
    // gathered blocks (which keeping them on the tape would hold: 4 x 16,640 bytes).
    REQUIRE(m[3] < 2 * kBlock + kBlocks * kShard + kBlock / 4);
    // The shard gradients and the input x (2 x 64 F32, made after `base`): nothing else stays.
    REQUIRE(m[4] == kBlocks * kShard + 2 * 64 * 4);
  }
}

TEST_CASE("fully_shard: misuse raises ValueError naming the call", "[autodiff][fully_shard]") {
  auto comms = InProcessGroup::create(1);
  Generator gen(11);
  auto shards = nn::ShardedParams::create(comms[0]);
  auto sharded = nn::fully_shard(std::make_shared<nn::Linear>(2, 2, gen), comms[0], "m", shards);
  REQUIRE_THROWS_WITH(sharded->clone(), Catch::Contains("fully_shard(m).clone: expected an "
                                                        "unsharded module"));
  REQUIRE_THROWS_AS(shards->set_gradient_weight(1.0, 0.0), ValueError);
  REQUIRE_THROWS_AS(shards->full_shape(nn::Param(Tensor::zeros({2}))), ValueError);
  REQUIRE_THROWS_AS(nn::fully_shard(nullptr, comms[0], "null"), ValueError);
  REQUIRE(shards->full_shape(sharded->module()->parameters()[0]) == Shape({2, 2}));
}

TEST_CASE("fully_shard: modules of different dtypes in one model each shard in their own dtype",
          "[autodiff][fully_shard]") {
  // An F32 Linear(3 -> 5) then an F64 Linear(5 -> 2): both gathers, both reductions, per dtype.
  const auto out = run_group(2, [](Communicator& comm) {
    Generator gen(12);
    auto a = std::make_shared<nn::Linear>(3, 5, gen);
    auto b = std::make_shared<nn::Linear>(5, 2, gen, nn::LinearOptions{.dtype = DType::F64});
    auto a2 = a->clone_as<nn::Linear>(), b2 = b->clone_as<nn::Linear>();
    const Var x = rank_x(comm.rank(), 3);
    sum(b->forward(to(tanh(a->forward(x)), DType::F64))).backward();
    Grads g;
    std::vector<nn::Param> plain = a->parameters();
    for (const nn::Param& p : b->parameters()) plain.push_back(p);
    g.reference = reference_shards(comm, plain);
    auto shards = nn::ShardedParams::create(comm);
    auto sa = nn::fully_shard(a2, comm, "f32", shards),
         sb = nn::fully_shard(b2, comm, "f64", shards);
    sum(sb->forward(to(tanh(sa->forward(x)), DType::F64))).backward();
    for (const nn::Param& p : sa->parameters()) g.sharded.push_back(p.grad());
    for (const nn::Param& p : sb->parameters()) g.sharded.push_back(p.grad());
    RUCCL_RANK_CHECK(g.sharded[0].dtype() == DType::F32);
    RUCCL_RANK_CHECK(g.sharded[2].dtype() == DType::F64);
    return g;
  });
  require_same(out);
}

TEST_CASE("a replicated value's gradient is W x through all_reduce_sum and 1 x through _mean",
          "[autodiff][fully_shard]") {
  // docs/autodiff.md §11: every rank holds the same v and runs backward on sum(op(v)); the
  // transpose of all_reduce_sum is all_reduce_sum (each rank's 1 summed: W), of all_reduce_mean
  // all_reduce_sum / W (1). fully_shard never feeds a gathered value through either.
  for (const int world : {2, 3}) {
    const auto out = run_group(world, [](Communicator& comm) {
      const Var a(Tensor::full({3}, 0.5), true), b(Tensor::full({3}, 0.5), true);
      sum(autodiff::collective::all_reduce_sum(a, comm)).backward();
      sum(autodiff::collective::all_reduce_mean(b, comm)).backward();
      return std::make_pair(a.grad().to_vector<float>(), b.grad().to_vector<float>());
    });
    for (const auto& r : out) {
      REQUIRE(r.value().first == std::vector<float>(3, static_cast<float>(world)));
      REQUIRE(r.value().second == std::vector<float>(3, 1.0f));
    }
  }
}
