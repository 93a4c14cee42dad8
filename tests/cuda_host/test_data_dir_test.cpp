// The golden-data directory: the environment variable RUCCL_TEST_DATA_DIR overrides the path
// compiled into the test binaries (a GPU machine runs them from a copy of the tree elsewhere).
#include "tests/support/test_data_dir.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using ruccl::testing::resolve_test_data_dir;

TEST_CASE("the RUCCL_TEST_DATA_DIR environment variable overrides the compiled data directory",
          "[cuda_host][test_data]") {
  CHECK(resolve_test_data_dir("/elsewhere/tests/data", "/build/tests/data") ==
        "/elsewhere/tests/data");
}

TEST_CASE("an unset or empty RUCCL_TEST_DATA_DIR leaves the compiled data directory",
          "[cuda_host][test_data]") {
  CHECK(resolve_test_data_dir(nullptr, "/build/tests/data") == "/build/tests/data");
  CHECK(resolve_test_data_dir("", "/build/tests/data") == "/build/tests/data");
}

TEST_CASE("test_data_path reads RUCCL_TEST_DATA_DIR at run time", "[cuda_host][test_data]") {
  const char* const before = std::getenv("RUCCL_TEST_DATA_DIR");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("RUCCL_TEST_DATA_DIR", "/copy/of/tests/data", 1);
  CHECK(ruccl::testing::test_data_path("x.txt") == "/copy/of/tests/data/x.txt");
  ::unsetenv("RUCCL_TEST_DATA_DIR");
  CHECK(ruccl::testing::test_data_dir() == RUCCL_TEST_DATA_DIR);
  if (before != nullptr) ::setenv("RUCCL_TEST_DATA_DIR", saved.c_str(), 1);
}
