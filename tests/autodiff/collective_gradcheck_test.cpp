// Every differentiable collective against float64 finite differences of the global objective
// (distributed_gradcheck), for world sizes 1 to 5, odd shapes and negative axes; collectives in
// the middle of larger graphs, with ranks whose local graphs differ; and distributed_gradcheck's
// own verdicts (it catches a wrong rule and reports a rank's own error).
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "collective/common/collective_error.h"
#include "tensor/tensor.h"
#include "tests/autodiff/rank_input.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;

namespace {

using OpFn = std::function<Var(Communicator&, const Var&)>;

// Rank r's input of `shape` (tests/autodiff/rank_input.h): every rank holds different values and
// no two elements tie (max/min stay differentiable).
using test::rank_input;

// Checks `op` over `world` ranks with rank r's loss L_r = sum(op(x_r) * c_r): x_r of `in_shape`
// requires grad, c_r (a constant of `out_shape`, different on every rank) weights each output
// element so that no routing mistake can cancel out.
void check_op(int world, const Shape& in_shape, const Shape& out_shape, const OpFn& op,
              std::uint64_t seed = 1) {
  std::vector<std::vector<Var>> inputs;
  for (int r = 0; r < world; ++r) {
    inputs.push_back(
        {Var(rank_input(in_shape, r, seed), true), Var(rank_input(out_shape, r, seed + 50))});
  }
  dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
      [&](Communicator& comm, const std::vector<Var>& in) {
        return sum(mul(op(comm, in[0]), in[1]));
      },
      inputs);
  INFO("world size " << world << ", input " << in_shape << ": " << report.message);
  CHECK(report.ok);
}

}  // namespace

TEST_CASE("all_gather and all_gather_dim pass distributed gradcheck for 1 to 5 ranks",
          "[autodiff][collective]") {
  for (int w = 1; w <= 5; ++w) {
    check_op(w, {2, 3}, {2 * w, 3},
             [](Communicator& c, const Var& x) { return dc::all_gather(x, c); });
    check_op(w, {3, 1}, {3, w},
             [](Communicator& c, const Var& x) { return dc::all_gather_dim(x, -1, c); });
    check_op(w, {1, 3, 1}, {1, 3 * w, 1},
             [](Communicator& c, const Var& x) { return dc::all_gather_dim(x, -2, c); });
  }
  // A 0-d input gathers to [W].
  check_op(3, {}, {3}, [](Communicator& c, const Var& x) { return dc::all_gather(x, c); });
}

TEST_CASE("reduce_scatter_sum and _mean (and their _dim forms) pass distributed gradcheck",
          "[autodiff][collective]") {
  for (int w = 1; w <= 5; ++w) {
    check_op(w, {w, 3}, {1, 3},
             [](Communicator& c, const Var& x) { return dc::reduce_scatter_sum(x, c); });
    check_op(w, {2 * w, 1}, {2, 1},
             [](Communicator& c, const Var& x) { return dc::reduce_scatter_mean(x, c); });
    check_op(w, {3, w}, {3, 1},
             [](Communicator& c, const Var& x) { return dc::reduce_scatter_sum_dim(x, -1, c); });
    check_op(w, {1, w, 3}, {1, 1, 3},
             [](Communicator& c, const Var& x) { return dc::reduce_scatter_mean_dim(x, -2, c); });
  }
}

TEST_CASE("all_reduce_sum, _mean, _max and _min pass distributed gradcheck",
          "[autodiff][collective]") {
  for (int w = 1; w <= 5; ++w) {
    check_op(w, {2, 3}, {2, 3},
             [](Communicator& c, const Var& x) { return dc::all_reduce_sum(x, c); });
    check_op(w, {3}, {3}, [](Communicator& c, const Var& x) { return dc::all_reduce_mean(x, c); });
    check_op(w, {3, 1}, {3, 1},
             [](Communicator& c, const Var& x) { return dc::all_reduce_max(x, c); });
    check_op(w, {1, 3}, {1, 3},
             [](Communicator& c, const Var& x) { return dc::all_reduce_min(x, c); });
  }
}

TEST_CASE("broadcast and all_to_all pass distributed gradcheck", "[autodiff][collective]") {
  for (int w = 1; w <= 5; ++w) {
    check_op(w, {2, 3}, {2, 3},
             [](Communicator& c, const Var& x) { return dc::broadcast(x, 0, c); });
    check_op(w, {3}, {3},
             [w](Communicator& c, const Var& x) { return dc::broadcast(x, w - 1, c); });
    check_op(w, {w, 2}, {w, 2}, [](Communicator& c, const Var& x) { return dc::all_to_all(x, c); });
    check_op(w, {2 * w}, {2 * w},
             [](Communicator& c, const Var& x) { return dc::all_to_all(x, c); });
  }
}

TEST_CASE(
    "collectives in the middle of a graph pass gradcheck when each rank's local graph differs",
    "[autodiff][collective]") {
  // Two all_reduce_sum of one shape and dtype: if ranks ran their backward collectives in
  // different orders, one rank's gradient for the first would be summed with another rank's
  // gradient for the second and the check would fail.
  for (int w : {2, 3, 5}) {
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < w; ++r) {
      inputs.push_back({Var(rank_input({2, 2}, r, 7), true), Var(rank_input({2, 2}, r, 8), true)});
    }
    auto fn = [](Communicator& comm, const std::vector<Var>& in) -> Var {
      const int r = comm.rank();
      Var x = in[0];
      Var y = in[1];
      if (r == 0) x = tanh(x * 1.5 + 0.25);  // extra local ops before the first collective
      Var a = dc::all_reduce_sum(x, comm);
      if (r % 2 == 1) y = exp(y * 0.5) - y;  // different local ops between the collectives
      Var b = dc::all_reduce_sum(y * a, comm);
      Var c = dc::all_gather_dim(b, -1, comm);
      // Ranks use the results in different orders, with different extra ops after them.
      if (r == 0) return sum(mul(sigmoid(c), c)) + sum(a * a);
      if (r == 1) return sum(a) * 0.5 + sum(tanh(c) * 2.0);
      return sum(c * c) - sum(exp(a * 0.1));
    };
    dc::DistributedGradcheckReport report = dc::distributed_gradcheck(fn, inputs);
    INFO("world size " << w << ": " << report.message);
    CHECK(report.ok);
  }
}

namespace {

// A full MLP in -> h1 -> h2 -> out (tanh), and its tensor-parallel split over W ranks:
// layer 1 column-parallel then all_gather_dim, layer 2 column-parallel (stays split), layer 3
// row-parallel then all_reduce_sum (its bias replicated, added after the sum).
struct Mlp {
  Tensor w1, b1, w2, b2, w3, b3;
};

Mlp random_mlp(std::int64_t in, std::int64_t h1, std::int64_t h2, std::int64_t out,
               std::uint64_t seed) {
  Generator gen(seed);
  auto draw = [&](const Shape& s) { return ruccl::mul(Tensor::randn(s, gen, DType::F64), 0.5); };
  Mlp m;
  m.w1 = draw({h1, in});
  m.b1 = draw({h1});
  m.w2 = draw({h2, h1});
  m.b2 = draw({h2});
  m.w3 = draw({out, h2});
  m.b3 = draw({out});
  return m;
}

Var full_forward(const Var& x, const std::vector<Var>& p) {
  Var h1 = tanh(linear(x, p[0], p[1]));
  Var h2 = tanh(linear(h1, p[2], p[3]));
  return linear(h2, p[4], p[5]);
}

// Rank r's shard of `full` (same order as Mlp's fields), as contiguous tensors.
std::vector<Tensor> shard(const Mlp& m, int r, int w) {
  const std::int64_t s1 = m.w1.size(0) / w;
  const std::int64_t s2 = m.w2.size(0) / w;
  return {m.w1.narrow(0, r * s1, s1).contiguous(), m.b1.narrow(0, r * s1, s1).contiguous(),
          m.w2.narrow(0, r * s2, s2).contiguous(), m.b2.narrow(0, r * s2, s2).contiguous(),
          m.w3.narrow(1, r * s2, s2).contiguous(), m.b3.clone()};
}

Var tp_forward(Communicator& comm, const Var& x, const std::vector<Var>& p) {
  Var h1 = dc::all_gather_dim(tanh(linear(x, p[0], p[1])), -1, comm);  // column-parallel
  Var h2 = tanh(linear(h1, p[2], p[3]));                               // column-parallel
  return dc::all_reduce_sum(linear(h2, p[4]), comm) + p[5];            // row-parallel
}

}  // namespace

TEST_CASE("a tensor-parallel MLP gives the loss and gradients of the same model on one rank",
          "[autodiff][collective]") {
  for (int w = 1; w <= 5; ++w) {
    const Mlp m = random_mlp(4, 3 * w, 2 * w, 3, 10 + static_cast<std::uint64_t>(w));
    Generator gen(99);
    const Tensor x = Tensor::randn({5, 4}, gen, DType::F64);
    const Tensor target = Tensor::randn({5, 3}, gen, DType::F64);

    // Reference: the whole model on this thread.
    std::vector<Var> full;
    for (const Tensor& t : {m.w1, m.b1, m.w2, m.b2, m.w3, m.b3}) full.emplace_back(t, true);
    Var ref_loss = mse_loss(full_forward(Var(x), full), Var(target));
    ref_loss.backward();

    // Tensor-parallel: every rank computes the same (replicated) loss, so the objective (the sum
    // over ranks) counts it W times: each rank runs backward on loss / W.
    struct RankOut {
      double loss;
      std::vector<Tensor> grads;
    };
    auto out = testing::run_group(w, [&](Communicator& comm) {
      std::vector<Var> p;
      for (const Tensor& t : shard(m, comm.rank(), w)) p.emplace_back(t, true);
      Var loss = mse_loss(tp_forward(comm, Var(x), p), Var(target));
      (loss / static_cast<double>(w)).backward();
      RankOut o{loss.value().item<double>(), {}};
      for (const Var& v : p) o.grads.push_back(v.grad());
      return o;
    });
    Tensor b3_sum = Tensor::zeros({3}, DType::F64);
    for (int r = 0; r < w; ++r) {
      INFO("world size " << w << ", rank " << r);
      const RankOut& o = out[static_cast<std::size_t>(r)].value();
      CHECK(o.loss == Approx(ref_loss.value().item<double>()).epsilon(1e-12));
      // Sharded parameters: exactly the slices of the full gradients.
      Mlp g{full[0].grad(), full[1].grad(), full[2].grad(),
            full[3].grad(), full[4].grad(), full[5].grad()};
      const std::vector<Tensor> expected = shard(g, r, w);
      for (std::size_t i = 0; i < 5; ++i) {
        INFO("parameter " << i);
        CHECK(ruccl::allclose(o.grads[i], expected[i], 1e-10, 1e-12));
      }
      // The replicated bias holds 1/W of its gradient on each rank: summed over ranks, it is
      // the full gradient (what a data-parallel all_reduce_sum of it would give).
      b3_sum = ruccl::add(b3_sum, o.grads[5]);
    }
    INFO("world size " << w);
    CHECK(ruccl::allclose(b3_sum, full[5].grad(), 1e-10, 1e-12));
  }
}

TEST_CASE("a tensor-parallel MLP passes distributed gradcheck", "[autodiff][collective]") {
  for (int w : {2, 3}) {
    const Mlp m = random_mlp(3, w, w, 2, 20 + static_cast<std::uint64_t>(w));
    Generator gen(5);
    const Tensor x = Tensor::randn({2, 3}, gen, DType::F64);
    const Tensor target = Tensor::randn({2, 2}, gen, DType::F64);
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < w; ++r) {
      std::vector<Var> in;
      for (const Tensor& t : shard(m, r, w)) in.emplace_back(t, true);
      in.emplace_back(x);
      in.emplace_back(target);
      inputs.push_back(std::move(in));
    }
    auto fn = [w](Communicator& comm, const std::vector<Var>& in) {
      std::vector<Var> p(in.begin(), in.begin() + 6);
      return mse_loss(tp_forward(comm, in[6], p), in[7]) / static_cast<double>(w);
    };
    dc::DistributedGradcheckReport report = dc::distributed_gradcheck(fn, inputs);
    INFO("world size " << w << ": " << report.message);
    CHECK(report.ok);
  }
}

namespace {

// all_reduce with the replicated-loss ("identity") backward: wrong under the sum convention.
Var all_reduce_identity_backward(const Var& x, Communicator& comm) {
  Tensor out = comm.all_reduce(x.value(), ReduceOperation::Sum);
  return make_var(std::move(out), "all_reduce_identity_backward", {x},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = g; });
}

}  // namespace

TEST_CASE("distributed_gradcheck catches a backward rule that ignores the other ranks",
          "[autodiff][collective]") {
  auto fn = [](Communicator& comm, const std::vector<Var>& in) {
    return sum(mul(all_reduce_identity_backward(in[0], comm), in[1]));
  };
  auto inputs_for = [](int w) {
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < w; ++r) {
      inputs.push_back({Var(rank_input({3}, r, 3), true), Var(rank_input({3}, r, 4))});
    }
    return inputs;
  };
  // One rank: identity is the right rule. Three: the other ranks' terms are missing.
  CHECK(dc::distributed_gradcheck(fn, inputs_for(1)).ok);
  dc::DistributedGradcheckReport report = dc::distributed_gradcheck(fn, inputs_for(3));
  INFO(report.message);
  CHECK_FALSE(report.ok);
  CHECK(report.message.find("distributed_gradcheck failed") == 0);
  CHECK(report.output_rank != report.input_rank);  // the missing terms are cross-rank
}

TEST_CASE("distributed_gradcheck rethrows a rank's own error and checks its arguments",
          "[autodiff][collective]") {
  std::vector<std::vector<Var>> inputs;
  for (int r = 0; r < 3; ++r) inputs.push_back({Var(rank_input({2}, r, 1), true)});
  // Rank 1 fails alone, before the collective the others wait in: they are released (Aborted)
  // and the rank's own ValueError is what comes out.
  auto fn = [](Communicator& comm, const std::vector<Var>& in) {
    RUCCL_CHECK(comm.rank() != 1, ValueError, "rank 1 refuses");
    return sum(dc::all_reduce_sum(in[0], comm));
  };
  CHECK_THROWS_AS(dc::distributed_gradcheck(fn, inputs), ValueError);
  CHECK_THROWS_AS(dc::distributed_gradcheck(fn, {}), ValueError);
  CHECK_THROWS_AS(dc::distributed_gradcheck(fn, {{Var(Tensor::ones({2}), true)}}), DTypeError);
}
