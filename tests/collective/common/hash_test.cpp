// fnv1a64 and mix64: the published FNV-1a 64 test vectors and murmur3's fmix64 values.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "collective/common/hash.h"

using namespace ruccl;

TEST_CASE("FNV-1a 64 matches the published test vectors", "[collective][hash]") {
  // From the FNV reference test suite (http://www.isthe.com/chongo/src/fnv/test_fnv.c).
  CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("b") == 0xaf63df4c8601f1a5ULL);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ULL);
  CHECK(fnv1a64(std::string("\0", 1)) == 0xaf63bd4c8601b7dfULL);
  static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cULL, "usable at compile time");
}

TEST_CASE("FNV-1a 64 continued from a prefix's hash equals the hash of the whole",
          "[collective][hash]") {
  const std::string text = "ruccl-session:10.0.0.1:29500";
  for (std::size_t split = 0; split <= text.size(); ++split) {
    INFO("split " << split);
    CHECK(fnv1a64(text.substr(split), fnv1a64(text.substr(0, split))) == fnv1a64(text));
  }
}

TEST_CASE("mix64 is murmur3's fmix64", "[collective][hash]") {
  CHECK(mix64(0) == 0);
  CHECK(mix64(1) == 0xb456bcfc34c2cb2cULL);
  CHECK(mix64(0xcbf29ce484222325ULL) != 0xcbf29ce484222325ULL);
}
