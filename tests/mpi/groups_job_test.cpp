// Communicator::split and Mesh over MPI processes (MPI_Comm_split under the MPI engine): the
// coverage table on every group of a mesh (2x2 with 4 processes, 1xW otherwise), key order and
// ties, a negative color, a split of a split, a mismatch named with the group, and an abort in a
// group that reaches the parent's ranks.
#include <chrono>
#include <thread>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/coverage_table.h"
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;
using namespace ruccl::testing::mpi_job;

namespace {

std::vector<std::int64_t> members(Communicator& comm, int parent_rank) {
  return comm.all_gather(Tensor::from_vector<std::int64_t>({parent_rank}))
      .to_vector<std::int64_t>();
}

void check_table_here(Communicator& comm, const std::vector<Call>& calls) {
  const int world = comm.world_size();
  const int r = comm.rank();
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const Call& c = calls[k];
    INFO("group world " << world << ", rank " << r << ", call " << k << ": " << describe(c));
    const Shape shape = input_shape(c, world);
    const CallValues values = call_values(c, world, shape.numel());
    const Tensor in =
        laid_out(values.inputs[static_cast<std::size_t>(r)], shape, c.dtype, c.layout);
    const Outputs got = run_call(comm, c, in);
    const Outputs expected = expected_outputs(c, world, r, values);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      REQUIRE(got[i].has_value() == expected[i].has_value());
      if (expected[i]) require_equal(*got[i], *expected[i]);
    }
  }
}

}  // namespace

TEST_CASE("the coverage table runs on the MPI groups of a mesh", "[mpi]") {
  Communicator comm = world();
  const int w = comm.world_size();
  Mesh mesh(comm, w == 4 ? std::vector<std::pair<std::string, int>>{{"dp", 2}, {"tp", 2}}
                         : std::vector<std::pair<std::string, int>>{{"dp", 1}, {"tp", w}});
  REQUIRE(mesh.comm("tp").engine_name() == "mpi");
  for (const char* axis : {"tp", "dp"}) {
    Communicator& g = mesh.comm(axis);
    REQUIRE(g.rank() == mesh.coordinate(axis));
    std::vector<Call> calls;
    for (Op op : kAllOpsTable) {
      for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64, DType::BF16}) {
        for (std::int64_t rows : {0, 1, 257}) {
          const int root = static_cast<int>(calls.size()) % g.world_size();
          calls.push_back({op, dtype, ReduceOperation::Sum, rows, 0, Layout::Contiguous, root});
        }
      }
    }
    for (const DTypeOp& pair : valid_dtype_ops()) {
      calls.push_back({Op::AllReduce, pair.dtype, pair.op, 3, 0, Layout::Contiguous, 0});
    }
    check_table_here(g, calls);
  }
}

TEST_CASE("MPI split orders by key then rank, leaves out a negative color, and nests", "[mpi]") {
  Communicator comm = world();
  const int r = comm.rank();
  const int w = comm.world_size();
  // Color 0 for every rank but the last (which joins none); keys descending, ranks 0 and 1 tied.
  std::optional<Communicator> g = comm.split(r == w - 1 ? -1 : 0, r <= 1 ? w : w - r);
  if (r == w - 1) {
    REQUIRE_FALSE(g.has_value());
  } else {
    REQUIRE(g.has_value());
    std::vector<std::int64_t> expected;
    for (int p = w - 2; p >= 2; --p) expected.push_back(p);  // keys 2 .. w-2 ascending
    expected.push_back(0);                                   // the tie, by parent rank
    expected.push_back(1);
    if (w == 2) expected = {0};
    REQUIRE(members(*g, r) == expected);
    // A split of the split: every rank alone.
    Communicator alone = *g->split(g->rank(), 0);
    REQUIRE(alone.world_size() == 1);
    REQUIRE(members(alone, r) == std::vector<std::int64_t>{r});
  }
  comm.barrier();  // the parent still works beside its groups
}

TEST_CASE("a mismatch in an MPI group names the group and its ranks as parent ranks", "[mpi]") {
  Communicator comm = world();
  const int r = comm.rank();
  Communicator g = *comm.split(0, -r, "everyone reversed");
  const CollectiveError e = require_error(CollectiveErrorKind::ShapeMismatch,
                                          [&] { g.all_reduce(Tensor::zeros({r == 0 ? 3 : 2})); });
  REQUIRE(contains(e.what(), "group everyone reversed of rank(s) ["));
  REQUIRE(contains(e.what(), "rank 0 has [3]"));
}

TEST_CASE("an abort in an MPI group reaches the ranks waiting in the parent", "[mpi]") {
  Communicator comm = world();
  const int r = comm.rank();
  Communicator g = *comm.split(r == 0 ? 0 : 1, r);
  if (r == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    g.abort("leaving the group");
  } else {
    require_failure(CollectiveErrorKind::Aborted, "leaving the group", [&] { comm.barrier(); });
  }
}
