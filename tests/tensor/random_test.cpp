// Generator (Philox4x32-10): known-answer vectors, reproducibility, state save/restore, the
// derived draws; Tensor::rand/randn/randperm/arange.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tensor/core/tensor.h"
#include "tensor/random/generator.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

TEST_CASE("Philox4x32-10 reproduces the Random123 known-answer vectors", "[tensor]") {
  // kat_vectors of Random123 1.09 (philox4x32_10).
  using Block = std::array<std::uint32_t, 4>;
  REQUIRE(Generator::philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
          Block{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  REQUIRE(Generator::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                   {0xffffffffu, 0xffffffffu}) ==
          Block{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  REQUIRE(Generator::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                                   {0xa4093822u, 0x299f31d0u}) ==
          Block{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("a Generator's stream is Philox block n for counter n and the seed as key", "[tensor]") {
  const std::uint64_t seed = 0x0123456789abcdefULL;
  Generator gen(seed);
  for (std::uint32_t n = 0; n < 3; ++n) {
    const auto block = Generator::philox4x32_10({n, 0, 0, 0}, {0x89abcdefu, 0x01234567u});
    for (std::uint32_t word : block) REQUIRE(gen.next_u32() == word);
  }
  // next_u64: the first word is the low half.
  Generator a(1);
  Generator b(1);
  const std::uint64_t lo = a.next_u32();
  const std::uint64_t hi = a.next_u32();
  REQUIRE(b.next_u64() == (lo | (hi << 32)));
}

TEST_CASE("two generators with the same seed give the same stream, other seeds differ",
          "[tensor]") {
  Generator a(42);
  Generator b(42);
  Generator c(43);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::uint32_t x = a.next_u32();
    REQUIRE(x == b.next_u32());
    differ += x != c.next_u32();
  }
  REQUIRE(differ > 990);
  REQUIRE(a.seed() == 42);
  Generator copy = a;  // copies the position
  REQUIRE(copy.next_u64() == a.next_u64());
  Generator t1(7);
  Generator t2(7);
  REQUIRE_THAT(Tensor::randn({3, 4}, t1), TensorEqual(Tensor::randn({3, 4}, t2)));
}

TEST_CASE("restoring a saved state continues the stream exactly", "[tensor]") {
  Generator gen(99);
  gen.next_u32();     // mid-block: 3 words buffered
  gen.next_normal();  // a spare normal pending
  const Generator::State saved = gen.state();
  std::vector<double> expected;
  for (int i = 0; i < 7; ++i) expected.push_back(gen.next_normal());
  expected.push_back(static_cast<double>(gen.next_u32()));

  Generator restored(1);
  restored.set_state(saved);
  REQUIRE(restored.seed() == 99);
  for (int i = 0; i < 7; ++i) REQUIRE(restored.next_normal() == expected[static_cast<size_t>(i)]);
  REQUIRE(static_cast<double>(restored.next_u32()) == expected[7]);

  Generator::State bad = saved;
  bad.buffered = 5;
  REQUIRE_THROWS_MATCHES(
      restored.set_state(bad), ValueError,
      Catch::Message(
          "Generator::set_state: expected buffered <= 4 (words left in a block), got 5"));
}

TEST_CASE("uniform draws follow their documented bit recipes and stay in [0, 1)", "[tensor]") {
  Generator a(5);
  Generator b(5);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(a.next_float() == static_cast<float>(b.next_u32() >> 8) * 0x1.0p-24f);
    REQUIRE(a.next_double() == static_cast<double>(b.next_u64() >> 11) * 0x1.0p-53);
  }
  for (DType dtype : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    INFO(dtype);
    Generator gen(17);
    const std::vector<double> v =
        Tensor::rand({4096}, gen, dtype).to(DType::F64).to_vector<double>();
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    REQUIRE(*lo >= 0.0);
    REQUIRE(*hi < 1.0);
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    REQUIRE(mean == Approx(0.5).margin(0.02));  // sd of the mean is 0.0045
  }
  REQUIRE_THROWS_AS(Tensor::rand({2}, a, DType::I64), DTypeError);
}

TEST_CASE("normal draws have mean 0 and variance 1", "[tensor]") {
  Generator gen(2024);
  const std::vector<double> v = Tensor::randn({20000}, gen, DType::F64).to_vector<double>();
  double sum = 0.0;
  double squares = 0.0;
  for (double x : v) {
    sum += x;
    squares += x * x;
  }
  const double n = static_cast<double>(v.size());
  // Standard errors: 0.007 for the mean, 0.01 for the variance; 4 sigma bounds.
  REQUIRE(sum / n == Approx(0.0).margin(0.03));
  REQUIRE(squares / n == Approx(1.0).margin(0.04));
  REQUIRE(Tensor::randn({2, 3}, gen, DType::BF16).dtype() == DType::BF16);
  REQUIRE_THROWS_MATCHES(Tensor::randn({2}, gen, DType::I32), DTypeError,
                         Catch::Message("Tensor::randn: expected a floating dtype, got I32"));
}

TEST_CASE("next_below is in range and uniform; randperm is a permutation", "[tensor]") {
  Generator gen(8);
  std::array<int, 6> counts{};
  for (int i = 0; i < 6000; ++i) {
    const std::uint64_t x = gen.next_below(6);
    REQUIRE(x < 6);
    ++counts[x];
  }
  for (int c : counts) REQUIRE(c == Approx(1000).margin(150));  // sd 29
  REQUIRE(gen.next_below(1) == 0);
  REQUIRE(gen.next_below(std::uint64_t{1} << 63) < (std::uint64_t{1} << 63));
  REQUIRE_THROWS_AS(gen.next_below(0), ValueError);

  std::vector<std::int64_t> perm = Tensor::randperm(1000, gen).to_vector<std::int64_t>();
  const std::vector<std::int64_t> shuffled = perm;
  std::sort(perm.begin(), perm.end());
  std::vector<std::int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  REQUIRE(perm == identity);
  REQUIRE(shuffled != identity);
  REQUIRE(Tensor::randperm(0, gen).shape() == Shape{0});
  REQUIRE(Tensor::randperm(1, gen).to_vector<std::int64_t>() == std::vector<std::int64_t>{0});
  REQUIRE_THROWS_AS(Tensor::randperm(-1, gen), ShapeError);
}

TEST_CASE("arange follows torch.arange for integer and floating arguments", "[tensor]") {
  REQUIRE_THAT(Tensor::arange(0, 5),
               TensorEqual(Tensor::from_vector<std::int64_t>({0, 1, 2, 3, 4}, {5})));
  REQUIRE_THAT(Tensor::arange(0, -5, -2),
               TensorEqual(Tensor::from_vector<std::int64_t>({0, -2, -4}, {3})));
  REQUIRE_THAT(Tensor::arange(1, 2.5, 0.5),
               TensorEqual(Tensor::from_vector<float>({1.0f, 1.5f, 2.0f}, {3})));
  // torch.arange(0, 1, 0.1): 10 floats, each start + i * step rounded once.
  const Tensor tenths = Tensor::arange(0, 1, 0.1);
  REQUIRE(tenths.dtype() == DType::F32);
  REQUIRE(tenths.numel() == 10);
  REQUIRE(tenths.to_vector<float>()[3] == static_cast<float>(3 * 0.1));
  REQUIRE_THAT(Tensor::arange(0, 5, 1, DType::F16),
               TensorEqual(Tensor::from_vector<float>({0, 1, 2, 3, 4}, {5}).to(DType::F16)));
  REQUIRE_THAT(Tensor::arange(0, 3, 1, DType::I32),
               TensorEqual(Tensor::from_vector<std::int32_t>({0, 1, 2}, {3})));
  REQUIRE(Tensor::arange(3, 3).shape() == Shape{0});
  REQUIRE(Tensor::arange(std::int64_t{1} << 40, (std::int64_t{1} << 40) + 2)
              .to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{std::int64_t{1} << 40, (std::int64_t{1} << 40) + 1});
  // The extremes of int64 do not overflow.
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  REQUIRE(Tensor::arange(kMin, kMax, kMax).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{kMin, -1, kMax - 1});
  REQUIRE(Tensor::arange(kMax, kMin, kMin).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{kMax, -1});
  REQUIRE(Tensor::arange(kMax - 2, kMax).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{kMax - 2, kMax - 1});
  REQUIRE_THROWS_MATCHES(Tensor::arange(0, 5, 0), ValueError,
                         Catch::Message("Tensor::arange: expected a non-zero step, got 0 (0 as "
                                        "an integer for I64)"));
  REQUIRE_THROWS_AS(Tensor::arange(0, 1, 0.3, DType::I64), ValueError);  // step truncates to 0
  REQUIRE_THROWS_MATCHES(Tensor::arange(0, 5, -1), ValueError,
                         Catch::Message("Tensor::arange: expected a step pointing from start to "
                                        "end, got start 0, end 5, step -1"));
  REQUIRE_THROWS_AS(Tensor::arange(0.0, 1.0, -0.5), ValueError);
  REQUIRE_THROWS_AS(Tensor::arange(0.0, std::nan(""), 1.0), ValueError);
}
