// Catch2's implementation, compiled once for every test program (ruccl_catch_session): the
// binaries with the plain main (catch_main.cpp) and the MPI job with its own
// (tests/mpi/mpi_job_main.cpp).
#define CATCH_CONFIG_RUNNER
#include "tests/support/catch_session.h"

#include <catch2/catch.hpp>

namespace ruccl::testing {

int run_catch_session(int argc, char** argv, const char* name) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (name != nullptr) session.configData().name = name;
  return session.run();
}

}  // namespace ruccl::testing
