// The main of ruccl_mpi_job: the Catch2 cases of tests/mpi/, run by every process of an mpirun
// job (tests/CMakeLists.txt starts them with -np 2, 3 and 4). Every process runs every case in the
// same order, each case making its own MpiGroup, and checks its own rank's results; mpirun fails
// when any process does. Catch2's output of each process is prefixed by its rank. Catch2's
// implementation comes from ruccl_catch_session (tests/support/catch_session.cpp).
#include <cstdlib>
#include <string>

#include "tests/support/catch_session.h"

int main(int argc, char** argv) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::string name = rank != nullptr ? std::string("rank ") + rank : std::string();
  return ruccl::testing::run_catch_session(argc, argv, rank != nullptr ? name.c_str() : nullptr);
}
