// Test names that a Catch2 test spec or a CMake list treats specially. Each must run as exactly
// one CTest test (cmake/discover_catch_tests.cmake); tools/check_test_count.sh checks that every
// CTest test of every binary ran exactly one case and that no case was left out.
#include <catch2/catch.hpp>

TEST_CASE("a name with a semicolon; CMake lists split on it", "[harness]") { SUCCEED(); }

TEST_CASE("a name with [brackets] that stop CMake list splitting", "[harness]") { SUCCEED(); }

TEST_CASE("[a name that starts with a bracket, a tag in a spec", "[harness]") { SUCCEED(); }

TEST_CASE("a name with a comma, which a spec reads as OR", "[harness]") { SUCCEED(); }

TEST_CASE("a name with a backslash \\ and a \"quote\" inside", "[harness]") { SUCCEED(); }

TEST_CASE("a name ending in a backslash \\", "[harness]") { SUCCEED(); }

TEST_CASE("~a name that starts with a tilde, a negation in a spec", "[harness]") { SUCCEED(); }

TEST_CASE("#a name that starts with a hash, which Catch2 lists quoted", "[harness]") { SUCCEED(); }

TEST_CASE("-a name that starts with a dash, like an option", "[harness]") { SUCCEED(); }

TEST_CASE("a name with a * in the middle", "[harness]") { SUCCEED(); }

TEST_CASE("a name ending in a star, a wildcard that matches only itself*", "[harness]") {
  SUCCEED();
}

TEST_CASE("a name with exclude: in the middle", "[harness]") { SUCCEED(); }

TEST_CASE("a name with ]==] that ends a CMake bracket argument", "[harness]") { SUCCEED(); }

TEST_CASE("a name with %3B, %5B and % that look encoded", "[harness]") { SUCCEED(); }

TEST_CASE("a name", "[harness]") { SUCCEED(); }

TEST_CASE("a name that another name is the start of", "[harness]") { SUCCEED(); }

TEST_CASE("a [slow] lookalike that is not tagged slow", "[harness]") { SUCCEED(); }

TEST_CASE("a case tagged slow; its CTest test has the label slow", "[harness][slow]") { SUCCEED(); }
