// DataParallel's ZeRO stages over MPI processes (the MPI engine): the final parameters of a few
// Adam steps equal plain DataParallel's bit for bit at any number of processes (the MPI engine
// honours the fold windows of ZeRO-2's reduces), and every rank holds the same bits.
#include <vector>

#include "autodiff/nn/loss.h"
#include "optim/adam.h"
#include "optim/data_parallel.h"
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

/// Three Adam steps of the MLP under `zero` (overlapped or not); the parameters as one vector.
Tensor train(Communicator& comm, int zero, bool overlap) {
  auto mlp = make_mlp(7);
  nn::Sequential& model = *mlp;
  DataParallel dp = DataParallel::initialize(comm, model, 0,
                                             {.overlap = overlap,
                                              .bucket_cap_bytes = 64,
                                              .first_bucket_cap_bytes = 64,
                                              .zero_stage = zero});
  Adam adam;
  for (int step = 0; step < 3; ++step) {
    Generator gen(700 + 13 * comm.rank() + step);
    const std::int64_t n = comm.rank() + 1;
    const Tensor x = Tensor::randn({n, 5}, gen), y = Tensor::randn({n, 3}, gen);
    model.zero_grad();
    const Var loss = nn::mse_loss(model.forward(Var(x)), Var(y), nn::Reduction::Sum);
    const auto w = static_cast<double>(n);
    if (zero == 2) {
      dp.step(adam, 0.01, model, dp.backward_shard(model, loss, w, LossReduction::Sum));
    } else {
      dp.step(adam, 0.01, model, dp.backward(model, loss, w, LossReduction::Sum));
    }
  }
  std::vector<Tensor> parts;
  for (const nn::Param& p : model.parameters()) parts.push_back(p.value().reshape({-1}));
  return ruccl::cat(parts, 0);
}

}  // namespace

TEST_CASE("ZeRO-1 and ZeRO-2 over MPI processes step to plain DataParallel's parameters", "[mpi]") {
  Communicator comm = world();
  const Tensor want = train(comm, 0, false);
  for (const auto& [zero, overlap] :
       {std::pair{1, false}, std::pair{2, false}, std::pair{2, true}}) {
    INFO("zero " << zero << (overlap ? " overlapped" : "") << ", " << comm.world_size()
                 << " processes");
    const Tensor got = train(comm, zero, overlap);
    const Tensor all = comm.all_gather(got.reshape({1, -1}));
    for (int r = 0; r < comm.world_size(); ++r) {
      REQUIRE_THAT(all.select(0, r), TensorEqual(all.select(0, 0)));
    }
    REQUIRE_THAT(got, TensorEqual(want));
  }
}
