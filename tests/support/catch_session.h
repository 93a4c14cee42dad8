#pragma once
// Catch2's session, for the mains of the test programs (catch_session.cpp holds Catch2's
// implementation, compiled once; Catch::Session itself is declared only there).

namespace ruccl::testing {

/// Runs the Catch2 session on the command line; `name`, when not null, is the name the reporter
/// gives the run (the MPI job: "rank 2"). Returns the process's exit status.
int run_catch_session(int argc, char** argv, const char* name = nullptr);

}  // namespace ruccl::testing
