// SyncBatchNorm: distributed gradcheck over 2 and 3 in-process ranks (its backward is the tape's,
// through all_reduce_sum's transpose), and W ranks holding parts of a batch (uneven, one rank
// empty) give BatchNorm's values, gradients and running statistics on the whole batch (F64).
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/nn/nn.h"
#include "tensor/tensor.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;
using ruccl::testing::TensorNear;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, DType::F64);
}

}  // namespace

TEST_CASE("SyncBatchNorm passes distributed gradcheck over 2 and 3 ranks, uneven batches",
          "[autodiff][collective][nn]") {
  for (int world : {2, 3}) {
    // Rank r holds r + 1 samples of [*, 2, 3]; input, weight and bias of every rank are probed.
    std::vector<std::vector<Var>> inputs;
    for (int r = 0; r < world; ++r) {
      const auto seed = static_cast<std::uint64_t>(100 * world + 10 * r);
      inputs.push_back({Var(randn({r + 1, 2, 3}, seed), true),
                        Var(ruccl::add(randn({2}, seed + 1), 1.0), true),
                        Var(randn({2}, seed + 2), true), Var(randn({r + 1, 2, 3}, seed + 3))});
    }
    dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
        [](Communicator& comm, const std::vector<Var>& in) {
          nn::SyncBatchNorm bn(2, comm, {.dtype = DType::F64});
          bn.set_param("weight", nn::Param(1, in[1]));
          bn.set_param("bias", nn::Param(2, in[2]));
          return sum(mul(bn(in[0]), in[3]));
        },
        inputs);
    INFO("world size " << world << ": " << report.message);
    CHECK(report.ok);
  }
}

TEST_CASE("SyncBatchNorm over W ranks equals BatchNorm on all the samples, values and gradients",
          "[autodiff][collective][nn]") {
  // 6 samples of [*, 3, 2] split (2, 4), (1, 0, 5) and (2, 2, 1, 1) over 2, 3 and 4 ranks.
  const Tensor x = randn({6, 3, 2}, 1);
  const Tensor c = randn({6, 3, 2}, 2);
  const Tensor w = ruccl::add(randn({3}, 3), 1.0);
  const Tensor b = randn({3}, 4);

  nn::BatchNorm1d ref(3, {.dtype = DType::F64});
  ref.weight().set_value(w.clone());
  ref.bias().set_value(b.clone());
  Var rx(x, true);
  sum(mul(ref(rx), Var(c))).backward();
  const Tensor ref_y1 = ref(rx).value();  // a second training step, then evaluation mode
  ref.eval();
  const Tensor ref_eval = ref(Var(x)).value();

  for (const std::vector<std::int64_t>& split :
       {std::vector<std::int64_t>{2, 4}, {1, 0, 5}, {2, 2, 1, 1}}) {
    const int world = static_cast<int>(split.size());
    struct Out {
      Tensor y, grad_x, grad_w, grad_b, second, eval, running_mean, running_var;
    };
    auto outs = testing::run_group(world, [&](Communicator& comm) {
      std::int64_t first = 0;
      for (int r = 0; r < comm.rank(); ++r) first += split[static_cast<std::size_t>(r)];
      const std::int64_t n = split[static_cast<std::size_t>(comm.rank())];
      nn::SyncBatchNorm bn(3, comm, {.dtype = DType::F64});
      bn.weight().set_value(w.clone());
      bn.bias().set_value(b.clone());
      Var xr(x.narrow(0, first, n).contiguous(), true);
      Var y = bn(xr);
      sum(mul(y, Var(c.narrow(0, first, n).contiguous()))).backward();
      const Tensor second = bn(xr).value();
      bn.eval();
      const Tensor eval = bn(xr).value();
      return Out{y.value(), xr.grad(), bn.weight().grad(),        bn.bias().grad(),
                 second,    eval,      bn.running_mean().clone(), bn.running_var().clone()};
    });
    Tensor grad_w = Tensor::zeros({3}, DType::F64);
    Tensor grad_b = Tensor::zeros({3}, DType::F64);
    std::int64_t first = 0;
    for (int r = 0; r < world; ++r) {
      INFO("split of " << world << " ranks, rank " << r);
      const Out& o = outs[static_cast<std::size_t>(r)].value();
      const std::int64_t n = split[static_cast<std::size_t>(r)];
      // Sums in another order than BatchNorm's: a few ulp.
      CHECK_THAT(o.y, TensorNear(ref_y1.narrow(0, first, n), 1e-12, 1e-13));
      CHECK_THAT(o.second, TensorNear(ref_y1.narrow(0, first, n), 1e-12, 1e-13));
      CHECK_THAT(o.grad_x, TensorNear(rx.grad().narrow(0, first, n), 1e-12, 1e-13));
      CHECK_THAT(o.eval, TensorNear(ref_eval.narrow(0, first, n), 1e-12, 1e-13));
      CHECK_THAT(o.running_mean, TensorNear(ref.running_mean(), 1e-12, 1e-13));
      CHECK_THAT(o.running_var, TensorNear(ref.running_var(), 1e-12, 1e-13));
      // The affine parameters' gradients are per-rank parts: they sum to BatchNorm's.
      grad_w = ruccl::add(grad_w, o.grad_w.defined() ? o.grad_w : Tensor::zeros({3}, DType::F64));
      grad_b = ruccl::add(grad_b, o.grad_b.defined() ? o.grad_b : Tensor::zeros({3}, DType::F64));
      first += n;
    }
    INFO("split of " << world << " ranks");
    CHECK_THAT(grad_w, TensorNear(ref.weight().grad(), 1e-12, 1e-13));
    CHECK_THAT(grad_b, TensorNear(ref.bias().grad(), 1e-12, 1e-13));
  }
}

TEST_CASE("SyncBatchNorm refuses a batch with no samples on any rank, on every rank",
          "[autodiff][collective][nn]") {
  auto outs = testing::run_group(2, [](Communicator& comm) {
    nn::SyncBatchNorm bn(2, comm, {.dtype = DType::F64});
    bn(Tensor::zeros({0, 2, 3}, DType::F64));
    return 0;
  });
  for (const auto& o : outs) {
    CHECK(o.message() ==
          "SyncBatchNorm: expected samples on at least one rank, got none on any of the 2 ranks");
  }
}
