// The CUDA kernels' element conversions (cuda/kernels/device_types.cuh, compiled here for the host:
// the same __host__ __device__ functions the kernels run) against the CPU backend's Half, BFloat16
// and integer conversions, and the scalar-operand conversions against Scalar::to.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cuda/kernels/device_types.cuh"
#include "cuda/kernels/tensor_ref.h"
#include "tensor/core/dtype.h"
#include "tensor/core/scalar.h"

using namespace ruccl;

namespace {

std::uint16_t bits_of(__half h) {
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
std::uint16_t bits_of(__nv_bfloat16 h) {
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

/// Floats that exercise rounding: ties, subnormals of both 16-bit formats, overflow, specials.
std::vector<float> probe_floats() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65520.0f,
                          65519.99f,
                          1e-8f,
                          6e-8f,
                          3e-8f,
                          1e30f,
                          -1e30f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          3.0e38f,
                          std::numeric_limits<float>::denorm_min(),
                          1.00048828125f,
                          1.000244140625f,
                          1.0009765625f,
                          1.00390625f,
                          1.001953125f};
  std::uint32_t x = 0x3f800001u;
  for (int i = 0; i < 4000; ++i) {  // a walk over exponents and mantissas
    float f;
    std::memcpy(&f, &x, 4);
    v.push_back(f);
    v.push_back(-f);
    x = x * 2654435761u + 12345u;
  }
  return v;
}

}  // namespace

TEST_CASE("the kernels round floats to F16 and BF16 exactly as the CPU backend does",
          "[cuda_host]") {
  for (const float f : probe_floats()) {
    INFO("value " << f);
    if (std::isnan(f)) {  // NaN stays NaN; the payload bits may differ (CUDA's is canonical)
      REQUIRE(std::isnan(cuda::to_compute(cuda::from_compute<__half>(f))));
      REQUIRE(std::isnan(cuda::to_compute(cuda::from_compute<__nv_bfloat16>(f))));
      continue;
    }
    REQUIRE(bits_of(cuda::from_compute<__half>(f)) == Half(f).bits);
    REQUIRE(bits_of(cuda::from_compute<__nv_bfloat16>(f)) == BFloat16(f).bits);
    // And back to float.
    const float h = cuda::to_compute(cuda::from_compute<__half>(f));
    const float b = cuda::to_compute(cuda::from_compute<__nv_bfloat16>(f));
    REQUIRE((std::isnan(h) ? std::isnan(static_cast<float>(Half(f)))
                           : h == static_cast<float>(Half(f))));
    REQUIRE((std::isnan(b) ? std::isnan(static_cast<float>(BFloat16(f)))
                           : b == static_cast<float>(BFloat16(f))));
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(cuda::to_compute(cuda::from_compute<__half>(nan))));
  CHECK(std::isnan(cuda::to_compute(cuda::from_compute<__nv_bfloat16>(nan))));
}

TEST_CASE("the kernels' dtype conversions follow the CPU backend's copy", "[cuda_host]") {
  // Through float for the 16-bit floats, != 0 for Bool, static_cast otherwise.
  CHECK(cuda::convert<bool>(0.25) == true);
  CHECK(cuda::convert<bool>(cuda::from_compute<__half>(0.0f)) == false);
  CHECK(cuda::convert<std::int32_t>(-2.75) == -2);
  CHECK(cuda::convert<std::int64_t>(cuda::from_compute<__nv_bfloat16>(3.5f)) == 3);
  CHECK(bits_of(cuda::convert<__half>(std::int64_t{2049})) == Half(2049.0f).bits);
  CHECK(bits_of(cuda::convert<__half>(1.0000001)) == Half(static_cast<float>(1.0000001)).bits);
  CHECK(cuda::convert<double>(true) == 1.0);
}

TEST_CASE("a scalar operand converts as Scalar::to does", "[cuda_host]") {
  const auto arg = [](Scalar s) {
    return cuda::ScalarArg{s.to_double(), s.is_integral() ? s.to_int() : 0, s.is_integral()};
  };
  for (const Scalar s : {Scalar(0.5), Scalar(-1.75), Scalar(3), Scalar(std::int64_t{1} << 53 | 1),
                         Scalar(0), Scalar(1e10)}) {
    INFO("scalar " << s.to_double());
    CHECK(arg(s).as<bool>() == s.to<bool>());
    CHECK(arg(s).as<std::int32_t>() == s.to<std::int32_t>());
    CHECK(arg(s).as<std::int64_t>() == s.to<std::int64_t>());
    CHECK(arg(s).as<float>() == s.to<float>());
    CHECK(arg(s).as<double>() == s.to<double>());
  }
}
