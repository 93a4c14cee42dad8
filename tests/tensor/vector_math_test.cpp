// The CPU backend's branch-free exp and erf for floats (tensor/backend/cpu/cpu_vector_math.h)
// against double-precision libm rounded to float, in ulps: a dense sweep of the ranges where the
// results are finite and not +-1, a stride over every float bit pattern, and the edge cases
// (zeros, subnormals, overflow and underflow bounds, infinities, NaN). Then the F32 ops that use
// them (exp, sigmoid, silu, gelu, erf, softmax) agree with their F64 results.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "tensor/backend/cpu/cpu_vector_math.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorNear;

namespace {

/// Floats in the order of their values as integers: ulp distance = difference.
std::int64_t ordinal(float f) {
  const auto i = std::bit_cast<std::int32_t>(f);
  return i < 0 ? std::int64_t{INT32_MIN} - i : i;
}

/// The largest ulp distance of f from double libm's g over `xs`; `worst` gets where it was.
template <typename F, typename G>
std::int64_t max_ulps(const std::vector<float>& xs, const F& f, const G& g, float& worst) {
  std::int64_t max = 0;
  for (const float x : xs) {
    const float expected = static_cast<float>(g(static_cast<double>(x)));
    const float got = f(x);
    if (std::isnan(expected) || std::isnan(got)) {
      if (std::isnan(expected) != std::isnan(got)) return INT64_MAX;
      continue;
    }
    const std::int64_t d = std::llabs(ordinal(expected) - ordinal(got));
    if (d > max) {
      max = d;
      worst = x;
    }
  }
  return max;
}

/// `count` evenly spaced floats in [lo, hi], plus one float in every 2^32 / `stride` bit patterns.
std::vector<float> sweep(float lo, float hi, int count, std::uint32_t stride) {
  std::vector<float> xs;
  for (int i = 0; i <= count; ++i) xs.push_back(lo + (hi - lo) * static_cast<float>(i) / count);
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += stride) {
    xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  }
  return xs;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();
constexpr float kMin = std::numeric_limits<float>::min();

}  // namespace

TEST_CASE("exp_f32 is within 1 ulp of the correctly rounded exp", "[tensor]") {
  // [-104, 89] covers every finite, non-zero result, subnormal ones included (below -87.3).
  std::vector<float> xs = sweep(-104.0f, 89.0f, 400000, 40009);
  for (const float x : {0.0f,      -0.0f,      kDenormMin,  -kDenormMin, kMin,     1e-30f,
                        -1e-7f,    1.0f,       -1.0f,       0.34657359f, 88.7228f, 88.72283f,
                        88.72284f, -87.33654f, -103.97207f, -103.97208f, -110.0f,  100.0f,
                        1e30f,     -1e30f,     kInf,        -kInf,       kNaN}) {
    xs.push_back(x);
  }
  float worst = 0;
  const std::int64_t ulps = max_ulps(
      xs, cpu::exp_f32, [](double x) { return std::exp(x); }, worst);
  INFO("worst at x = " << worst);
  CHECK(ulps <= 1);
  CHECK(cpu::exp_f32(kInf) == kInf);
  CHECK(cpu::exp_f32(-kInf) == 0.0f);
  CHECK(cpu::exp_f32(89.0f) == kInf);
  CHECK(cpu::exp_f32(-104.0f) == 0.0f);
  CHECK(std::isnan(cpu::exp_f32(kNaN)));
  CHECK(cpu::exp_f32(0.0f) == 1.0f);
  CHECK(cpu::exp_f32(-100.0f) > 0.0f);  // a subnormal result, not flushed to zero
}

TEST_CASE("erf_f32 is within 6 ulp of the correctly rounded erf", "[tensor]") {
  std::vector<float> xs = sweep(-4.5f, 4.5f, 400000, 40009);
  for (const float x : {0.0f, -0.0f, kDenormMin, -kDenormMin, kMin, -kMin, 1e-20f, 0.5f, -0.5f,
                        0.8427f, 2.0f, 3.9f, 4.0f, -4.0f, 10.0f, -10.0f, kInf, -kInf, kNaN}) {
    xs.push_back(x);
  }
  float worst = 0;
  const std::int64_t ulps = max_ulps(
      xs, cpu::erf_f32, [](double x) { return std::erf(x); }, worst);
  INFO("worst at x = " << worst << ": " << ulps << " ulp");
  CHECK(ulps <= 6);  // 6 at x = 3.26 (erf 0.999997) over every 61st float
  CHECK(cpu::erf_f32(kInf) == 1.0f);
  CHECK(cpu::erf_f32(-kInf) == -1.0f);
  CHECK(std::isnan(cpu::erf_f32(kNaN)));
  CHECK(std::signbit(cpu::erf_f32(-0.0f)));
}

TEST_CASE("the F32 ops on exp and erf agree with their F64 values", "[tensor]") {
  Generator gen(7);
  const Tensor x = ruccl::mul(Tensor::randn({3, 257}, gen, DType::F64), 4.0);
  const Tensor x32 = x.to(DType::F32);
  const auto near = [](const Tensor& got, const Tensor& expected, double atol = 1e-7) {
    CHECK_THAT(got.to(DType::F64), TensorNear(expected, 2e-6, atol));
  };
  near(ruccl::exp(x32), ruccl::exp(x32.to(DType::F64)));
  near(ruccl::sigmoid(x32), ruccl::sigmoid(x32.to(DType::F64)));
  near(ruccl::silu(x32), ruccl::silu(x32.to(DType::F64)));
  // erf_f32's 6 ulp near +-1 are 4e-7 absolute; GELU = x/2 (1 + erf(x / sqrt 2)) multiplies that
  // by |x| / 2 where 1 + erf cancels (x < -2). PyTorch 1.13's own vectorised erf: 1.5e-7.
  near(ruccl::gelu(x32), ruccl::gelu(x32.to(DType::F64)), 2e-6);
  near(ruccl::erf(x32), ruccl::erf(x32.to(DType::F64)), 5e-7);
  near(ruccl::softmax(x32, 1), ruccl::softmax(x32.to(DType::F64), 1));
  near(ruccl::log_softmax(x32, 1), ruccl::log_softmax(x32.to(DType::F64), 1));
  near(ruccl::softmax(x32, 0), ruccl::softmax(x32.to(DType::F64), 0));
}
