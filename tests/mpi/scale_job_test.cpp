// A job of many MPI processes (tests/CMakeLists.txt starts it with -np 32, on its own: the case
// is hidden from the 2-, 3- and 4-process runs): the world communicator, an all_reduce whose sum
// names every rank, a barrier, a group per half of the job, and a clean exit.
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing::mpi_job;

TEST_CASE("Every process of a many-process MPI job meets, all_reduces and passes a barrier",
          "[.][mpi-scale]") {
  Communicator comm = world(std::chrono::seconds(60));
  const int r = comm.rank();
  const int w = comm.world_size();
  REQUIRE(w == job_size());
  const Tensor t = Tensor::from_vector<double>({r + 1.0, 0.5}, Shape{2});
  const std::vector<double> sum = comm.all_reduce(t).to_vector<double>();
  REQUIRE(sum == std::vector<double>{w * (w + 1) / 2.0, w / 2.0});
  comm.barrier();
  // Two halves, each summing its own ranks.
  Communicator half = *comm.split(r < w / 2 ? 0 : 1, r, "half");
  const int first = r < w / 2 ? 0 : w / 2;
  const int n = half.world_size();
  const std::vector<double> hs = half.all_reduce(t).to_vector<double>();
  REQUIRE(hs[0] == n * (2.0 * first + n + 1) / 2.0);
  comm.barrier();
}
