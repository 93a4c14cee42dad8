// CRC-32C: the published check values, incremental use at every split, and the hardware path
// agreeing with the portable tables on every length and alignment.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "collective/common/crc32c.h"

using namespace ruccl;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng());
  return out;
}

// Bit by bit from the definition (reflected 0x82F63B78, inverted in and out): the reference
// that shares no table with either implementation.
std::uint32_t crc32c_bitwise(const std::uint8_t* p, std::size_t n) {
  std::uint32_t r = 0xFFFFFFFF;
  for (std::size_t i = 0; i < n; ++i) {
    r ^= p[i];
    for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ ((r & 1) ? 0x82F63B78u : 0u);
  }
  return ~r;
}

}  // namespace

TEST_CASE("CRC-32C matches the check value and the RFC 3720 test vectors", "[collective][tcp]") {
  std::vector<std::uint8_t> zeros(32, 0x00), ones(32, 0xFF), up(32), down(32);
  for (std::size_t i = 0; i < 32; ++i) {
    up[i] = static_cast<std::uint8_t>(i);
    down[i] = static_cast<std::uint8_t>(31 - i);
  }
  const std::string check = "123456789";
  struct Vector {
    const void* data;
    std::size_t n;
    std::uint32_t crc;
  };
  const Vector vectors[] = {{check.data(), check.size(), 0xE3069283},
                            {zeros.data(), 32, 0x8A9136AA},
                            {ones.data(), 32, 0x62A8AB43},
                            {up.data(), 32, 0x46DD794E},
                            {down.data(), 32, 0x113FDB5C},
                            {nullptr, 0, 0x00000000}};
  for (const Vector& v : vectors) {
    INFO("bytes: " << v.n << ", expected 0x" << std::hex << v.crc);
    REQUIRE(crc32c(v.data, v.n) == v.crc);
    REQUIRE(crc32c_portable(v.data, v.n) == v.crc);
    if (crc32c_hardware_available()) REQUIRE(crc32c_hardware(v.data, v.n) == v.crc);
  }
}

TEST_CASE("CRC-32C continued from a prefix equals the CRC of the whole at every split",
          "[collective][tcp]") {
  const auto bytes = random_bytes(300, 1);
  const std::uint32_t whole = crc32c(bytes.data(), bytes.size());
  REQUIRE(whole == crc32c_bitwise(bytes.data(), bytes.size()));
  for (std::size_t split = 0; split <= bytes.size(); ++split) {
    INFO("split at " << split);
    const std::uint32_t head = crc32c(bytes.data(), split);
    REQUIRE(crc32c(bytes.data() + split, bytes.size() - split, head) == whole);
    const std::uint32_t head_sw = crc32c_portable(bytes.data(), split);
    REQUIRE(crc32c_portable(bytes.data() + split, bytes.size() - split, head_sw) == whole);
  }
  // Three pieces of a buffer long enough for the long three-stream blocks, as a receiver that
  // verifies pieces as they arrive would feed it.
  const auto big = random_bytes(100'000, 2);
  const std::uint32_t big_whole = crc32c_bitwise(big.data(), big.size());
  const std::uint32_t a = crc32c(big.data(), 30'001);
  const std::uint32_t b = crc32c(big.data() + 30'001, 40'000, a);
  REQUIRE(crc32c(big.data() + 70'001, big.size() - 70'001, b) == big_whole);
}

TEST_CASE("CRC-32C in hardware equals the portable tables on every length and alignment",
          "[collective][tcp]") {
  if (!crc32c_hardware_available()) {
    WARN("this CPU has no SSE4.2: only the portable path runs (crc32c uses it)");
    REQUIRE(crc32c_implementation() == "portable slicing-by-8");
    return;
  }
  REQUIRE(crc32c_implementation() == "sse4.2, 3 streams");
  const auto bytes = random_bytes(200'000, 3);
  std::mt19937 rng(4);
  // Every length 0..5000 (below, within and just above the short three-stream blocks of 768
  // bytes), each at a random start so every alignment mod 8 occurs; then lengths up to 190 KB
  // crossing the long blocks of 24 KiB.
  for (std::size_t n = 0; n <= 5000; ++n) {
    const std::size_t start = rng() % 64;
    INFO("length " << n << " at offset " << start);
    REQUIRE(crc32c_hardware(bytes.data() + start, n) == crc32c_portable(bytes.data() + start, n));
  }
  for (std::size_t n : {24575u, 24576u, 24577u, 24576u + 767u, 24576u + 768u, 49152u, 190'000u}) {
    for (std::size_t start = 0; start < 8; ++start) {
      INFO("length " << n << " at offset " << start);
      const std::uint32_t sw = crc32c_portable(bytes.data() + start, n);
      REQUIRE(crc32c_hardware(bytes.data() + start, n) == sw);
      REQUIRE(crc32c_bitwise(bytes.data() + start, n) == sw);
    }
  }
  // A nonzero running CRC enters the three streams the same way in both.
  REQUIRE(crc32c_hardware(bytes.data() + 5, 100'000, 0xDEADBEEF) ==
          crc32c_portable(bytes.data() + 5, 100'000, 0xDEADBEEF));
}
