// The main of ruccl_mpi_job: the Catch2 cases of tests/mpi/, run by every process of an mpirun
// job (tests/CMakeLists.txt starts them with -np 2, 3 and 4). Every process runs every case in the
// same order, each case making its own MpiGroup, and checks its own rank's results; mpirun fails
// when any process does. Catch2's output of each process is prefixed by its rank.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) {
    session.configData().name = std::string("rank ") + rank;
  }
  return session.run();
}
