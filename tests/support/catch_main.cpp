// The main of the test binaries: Catch2's session on the command line, as CATCH_CONFIG_MAIN
// would write it (Catch2's implementation is catch_session.cpp, shared with the MPI job).
#include "tests/support/catch_session.h"

int main(int argc, char** argv) { return ruccl::testing::run_catch_session(argc, argv); }
