// DataParallel over MPI processes (the MPI engine): gradients reduced bucket by bucket while
// backward runs (overlap) and no_sync micro-batches, against the plain reduce of the same step.
// The MPI engine honours the buckets' fold windows (its fused and pairwise paths fold in their
// chunks, the rest goes to our algorithms), so every plan is bit-identical to reduce() at any
// number of processes, as over threads (docs/training.md, "Exactness").
#include <array>
#include <vector>

#include "autodiff/nn/loss.h"
#include "optim/data_parallel.h"
#include "optim/gradients_accumulator.h"
#include "tensor/ops/shape_ops.h"
#include "tests/mpi/mpi_job_support.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using namespace ruccl::testing::mpi_job;
using autodiff::Var;
using optim::test_support::make_mlp;
using ruccl::testing::TensorEqual;

namespace {

/// Rank r's micro-batch k: r + k + 1 samples (uneven weights).
std::pair<Tensor, Tensor> batch(int rank, int k) {
  Generator gen(1000 + 17 * rank + k);
  const std::int64_t n = rank + k + 1;
  return {Tensor::randn({n, 5}, gen), Tensor::randn({n, 3}, gen)};
}

Var loss_of(nn::Sequential& model, int rank, int k) {
  const auto [x, y] = batch(rank, k);
  return nn::mse_loss(model.forward(Var(x)), Var(y), nn::Reduction::Mean);
}

/// The four gradients as one F32 vector, ParamId order.
Tensor flat(const GradientsParams& g) {
  std::vector<Tensor> parts;
  for (ParamId id = 1; id <= 4; ++id) parts.push_back(g.get(id)->reshape({-1}));
  return ruccl::cat(parts, 0);
}

/// Every rank holds the same bits as rank 0.
void require_same_on_every_rank(Communicator& comm, const Tensor& mine) {
  const Tensor all = comm.all_gather(mine.reshape({1, -1}));
  for (int r = 0; r < comm.world_size(); ++r) {
    INFO("rank " << r);
    REQUIRE_THAT(all.select(0, r), TensorEqual(all.select(0, 0)));
  }
}

}  // namespace

TEST_CASE("DataParallel's overlapped backward over MPI processes equals the plain reduce",
          "[mpi]") {
  Communicator comm = world();
  const int r = comm.rank();
  const int w = comm.world_size();
  auto mlp = make_mlp(7);  // the same on every rank
  nn::Sequential& model = *mlp;
  DataParallel plain = DataParallel::initialize(comm, model, 0);
  model.zero_grad();
  Var loss = loss_of(model, r, 0);
  loss.backward();
  const double weight = static_cast<double>(r + 1);
  const Tensor want =
      flat(plain.reduce(model, GradientsParams::from_module(model), weight, LossReduction::Mean));
  for (std::int64_t cap : {std::int64_t{4}, std::int64_t{200}, std::int64_t{1} << 20}) {
    INFO("bucket cap " << cap << " bytes, " << w << " processes");
    DataParallel dp = DataParallel::initialize(
        comm, model, 0,
        {.overlap = true, .bucket_cap_bytes = cap, .first_bucket_cap_bytes = cap / 2 + 1});
    REQUIRE(dp.bucket_plan().buckets().size() == (cap == 4 ? 4U : cap == 200 ? 3U : 1U));
    model.zero_grad();
    const Tensor got = flat(dp.backward(model, loss_of(model, r, 0), weight, LossReduction::Mean));
    require_same_on_every_rank(comm, got);
    REQUIRE_THAT(got, TensorEqual(want));  // each bucket folds in its fold window's order
  }
}

TEST_CASE("no_sync micro-batches over MPI processes are reduced once, as accumulate then reduce",
          "[mpi]") {
  Communicator comm = world();
  const int r = comm.rank();
  auto mlp = make_mlp(7);  // the same on every rank
  nn::Sequential& model = *mlp;
  // The reference: the window kept by the caller, then one reduce.
  DataParallel plain = DataParallel::initialize(comm, model, 0);
  GradientsAccumulator acc;
  for (int k = 0; k < 3; ++k) {
    model.zero_grad();
    loss_of(model, r, k).backward();
    acc.accumulate(GradientsParams::from_module(model), static_cast<double>(r + k + 1),
                   LossReduction::Mean);
  }
  const Tensor want = flat(plain.reduce(model, acc.take()));
  for (bool overlap : {false, true}) {
    INFO("overlap " << overlap);
    DataParallel dp = DataParallel::initialize(comm, model, 0, {.overlap = overlap});
    model.zero_grad();
    for (int k = 0; k < 2; ++k) {
      dp.no_sync(model, loss_of(model, r, k), static_cast<double>(r + k + 1), LossReduction::Mean);
    }
    const Tensor got = flat(
        dp.backward(model, loss_of(model, r, 2), static_cast<double>(r + 3), LossReduction::Mean));
    REQUIRE_THAT(got, TensorEqual(want));
    require_same_on_every_rank(comm, got);
  }
}
