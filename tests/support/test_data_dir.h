#pragma once
// Where the tests' golden data lives. The build compiles in the source tree's tests/data
// (RUCCL_TEST_DATA_DIR); a test binary run from a copy of the tree elsewhere (tools/gpu_check.sh
// on a GPU machine) is pointed at that copy by the environment variable of the same name.
#include <cstdlib>
#include <string>

namespace ruccl::testing {

/// The directory of golden data: `env` when it is set and not empty, else `compiled`.
inline std::string resolve_test_data_dir(const char* env, const char* compiled) {
  if (env != nullptr && *env != '\0') return env;
  return compiled != nullptr ? compiled : "";
}

#ifdef RUCCL_TEST_DATA_DIR
/// The directory of golden data: $RUCCL_TEST_DATA_DIR at run time, else the path compiled in.
inline std::string test_data_dir() {
  return resolve_test_data_dir(std::getenv("RUCCL_TEST_DATA_DIR"), RUCCL_TEST_DATA_DIR);
}

/// The path of golden file `name` under test_data_dir().
inline std::string test_data_path(const std::string& name) { return test_data_dir() + "/" + name; }
#endif

}  // namespace ruccl::testing
