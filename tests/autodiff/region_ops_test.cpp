// The region ops (autodiff/collective/region_ops.h): distributed_gradcheck in float64 of
// functions that enter replicated values with reduce_from_region and leave with copy_to_region;
// the replicated-parameter rule against one rank; the W x trap they close; errors.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "collective/collective.h"
#include "collective/run_ranks.h"
#include "tensor/tensor.h"
#include "tests/autodiff/rank_input.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;

using test::rank_input;

TEST_CASE(
    "copy_to_region and reduce_from_region pass distributed_gradcheck around a replicated "
    "region",
    "[autodiff][collective]") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    // Rank r: x = Σ u (replicated), a replicated tanh, then per-rank use with its own w_r, summed
    // back into a replicated value and left per-rank.
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < world; ++r) {
      inputs.push_back({Var(rank_input({2, 3}, r, 1), true), Var(rank_input({3, 2}, r, 2), true)});
    }
    const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
        [](Communicator& comm, const std::vector<Var>& in) {
          const Var x = tanh(dc::reduce_from_region(in[0], comm));   // replicated [2, 3]
          const Var h = matmul(dc::copy_to_region(x, comm), in[1]);  // per-rank [2, 2]
          const Var z = mul(dc::reduce_from_region(tanh(h), comm), narrow(x, 1, 0, 2));
          return dc::copy_to_region(z, comm);  // per-rank output
        },
        inputs);
    INFO(report.message);
    REQUIRE(report.ok);
  }
}

TEST_CASE("scatter_to_region and gather_from_region pass distributed_gradcheck",
          "[autodiff][collective]") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < world; ++r) {
      inputs.push_back(
          {Var(rank_input({2, 6}, r, 3), true), Var(rank_input({2, 6 / world}, r, 4), true)});
    }
    const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
        [](Communicator& comm, const std::vector<Var>& in) {
          const Var x = dc::reduce_from_region(in[0], comm);             // replicated [2, 6]
          const Var s = mul(dc::scatter_to_region(x, -1, comm), in[1]);  // per-rank [2, 6 / W]
          const Var g = dc::gather_from_region(tanh(s), 1, comm);        // replicated [2, 6]
          return dc::copy_to_region(mul(g, x), comm);
        },
        inputs);
    INFO(report.message);
    REQUIRE(report.ok);
  }
}

namespace {

// The MLP of region_ops.h's comment on one rank's shard: y = relu(x w1ᵀ) w2ᵀ + b, loss mse
// against t. Returns the loss and the gradients of (w1 shard, w2 shard, b).
struct MlpRun {
  double loss = 0.0;
  Tensor g1, g2, gb;
};

MlpRun run_mlp(Communicator* comm, const Tensor& x, const Tensor& t, const Tensor& w1,
               const Tensor& w2, const Tensor& b, bool plain_all_reduce = false) {
  Var v1(w1, true), v2(w2, true), vb(b, true);
  Var y;
  if (comm == nullptr) {
    y = add(matmul(relu(matmul(Var(x), transpose(v1, 0, 1))), transpose(v2, 0, 1)), vb);
  } else {
    const Var h = relu(matmul(dc::copy_to_region(Var(x), *comm), transpose(v1, 0, 1)));
    const Var p = matmul(h, transpose(v2, 0, 1));
    y = add(plain_all_reduce ? dc::all_reduce_sum(p, *comm) : dc::reduce_from_region(p, *comm), vb);
  }
  Var loss = mse_loss(y, Var(t));
  loss.backward();
  return {loss.value().item<double>(), v1.grad(), v2.grad(), vb.grad()};
}

}  // namespace

TEST_CASE(
    "a replicated bias after reduce_from_region gets the one-rank gradient, bit-identical "
    "on every rank, with no loss / W and no hand all-reduce",
    "[autodiff][collective]") {
  Generator gen(5);
  const Tensor x = Tensor::randn({4, 3}, gen, DType::F64);
  const Tensor t = Tensor::randn({4, 2}, gen, DType::F64);
  const Tensor w1 = Tensor::randn({6, 3}, gen, DType::F64);
  const Tensor w2 = Tensor::randn({2, 6}, gen, DType::F64);
  const Tensor b = Tensor::randn({2}, gen, DType::F64);
  const MlpRun one = run_mlp(nullptr, x, t, w1, w2, b);
  for (bool plain : {false, true}) {
    CAPTURE(plain);
    std::vector<MlpRun> runs(2);
    run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
      const int r = comm.rank();
      runs[static_cast<std::size_t>(r)] = run_mlp(&comm, x, t, w1.narrow(0, 3 * r, 3).clone(),
                                                  w2.narrow(1, 3 * r, 3).clone(), b, plain);
    });
    for (int r = 0; r < 2; ++r) {
      CAPTURE(r);
      const MlpRun& run = runs[static_cast<std::size_t>(r)];
      CHECK(run.loss == Approx(one.loss).epsilon(1e-12));
      // With the plain all_reduce_sum (backward all_reduce_sum) the replicated loss counts W
      // times: every sharded gradient is doubled. The bias alone stays whole (it is added after).
      const double scale = plain ? 2.0 : 1.0;
      CHECK(allclose(run.g1, mul(one.g1.narrow(0, 3 * r, 3), scale), 1e-12, 0.0));
      CHECK(allclose(run.g2, mul(one.g2.narrow(1, 3 * r, 3), scale), 1e-12, 0.0));
      CHECK(allclose(run.gb, one.gb, 1e-12, 0.0));
    }
    CHECK(equal(runs[0].gb, runs[1].gb));  // bit for bit
  }
}

TEST_CASE("the region ops check their axis and divisibility, naming expected and got",
          "[autodiff][collective]") {
  std::vector<std::string> scatter(2), axis(2), gather(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    try {
      dc::scatter_to_region(Var(Tensor::zeros({2, 3}, DType::F64), true), 1, comm);
    } catch (const ShapeError& e) {
      scatter[r] = e.what();
    }
    try {
      dc::scatter_to_region(Var(Tensor::zeros({2, 4}, DType::F64), true), 2, comm);
    } catch (const IndexError& e) {
      axis[r] = e.what();
    }
    try {
      dc::gather_from_region(Var(Tensor::zeros({2, 4}, DType::F64), true), -3, comm);
    } catch (const IndexError& e) {
      gather[r] = e.what();
    }
  });
  for (std::size_t r = 0; r < 2; ++r) {
    CHECK_THAT(scatter[r], Catch::Contains("scatter_to_region: expected dim 1 of the input "
                                           "divisible by the group size 2, got shape [2, 3]"));
    CHECK_THAT(axis[r], Catch::Contains("scatter_to_region: expected an axis in [-2, 2)"));
    CHECK_THAT(axis[r], Catch::Contains("got 2"));
    CHECK_THAT(gather[r], Catch::Contains("gather_from_region: expected an axis in [-2, 2)"));
  }
}
