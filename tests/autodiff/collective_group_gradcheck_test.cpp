// Differentiable collectives on groups split from a parent (Communicator::split, Mesh): each
// records the group it was called with, so its backward runs on the same group. Checked with
// distributed_gradcheck in float64 over the whole cross-rank Jacobian: a backward that ran on the
// parent (or on the other axis) would mix the gradients of ranks outside the group.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "collective/mesh.h"
#include "tensor/tensor.h"
#include "tests/autodiff/rank_input.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;

using test::rank_input;

TEST_CASE("all_reduce and all_gather on split groups differentiate over their own group",
          "[autodiff][collective]") {
  // 4 ranks: rows {0, 1} {2, 3} by split, then the columns {0, 2} {1, 3} of a 2x2 mesh. Rank r's
  // loss mixes an all_reduce_sum over its row, an all_gather over its row and an all_reduce_mean
  // over its column, weighted by a constant of its own.
  std::vector<std::vector<Var>> inputs;
  for (int r = 0; r < 4; ++r) {
    inputs.push_back({Var(rank_input({3}, r, 7), true), Var(rank_input({6}, r, 8))});
  }
  const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
      [](Communicator& comm, const std::vector<Var>& in) {
        Communicator row = *comm.split(comm.rank() / 2, comm.rank());
        Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});
        const Var summed = dc::all_reduce_sum(mul(in[0], in[0]), row);
        const Var gathered = dc::all_gather(mul(summed, in[0]), row);  // [6]
        const Var mean = dc::all_reduce_mean(mul(gathered, in[1]), mesh.comm("dp"));
        return sum(mul(mean, in[1]));
      },
      inputs);
  INFO(report.message);
  REQUIRE(report.ok);
}

TEST_CASE("reduce_scatter and broadcast on a nested split differentiate over their group",
          "[autodiff][collective]") {
  std::vector<std::vector<Var>> inputs;
  for (int r = 0; r < 4; ++r) {
    inputs.push_back({Var(rank_input({4}, r, 11), true), Var(rank_input({2}, r, 12))});
  }
  const dc::DistributedGradcheckReport report = dc::distributed_gradcheck(
      [](Communicator& comm, const std::vector<Var>& in) {
        // Groups {1, 3} and {0, 2} (keys reverse the order), then each split again into itself.
        Communicator pair = *comm.split(comm.rank() % 2, -comm.rank());
        Communicator same = *pair.split(0, pair.rank());
        const Var shard = dc::reduce_scatter_sum(mul(in[0], in[0]), same);  // [2]
        const Var root = dc::broadcast(mul(shard, in[1]), 1, pair);
        return sum(mul(root, in[1]));
      },
      inputs);
  INFO(report.message);
  REQUIRE(report.ok);
}
