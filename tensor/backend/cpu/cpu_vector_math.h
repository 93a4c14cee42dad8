#pragma once
// exp and erf of floats without a libm call, written branch-free (selects, bit casts, fused
// multiply-adds) so that the compiler vectorises the element loops that call them (libm's expf
// and erff are opaque calls: one element at a time). Used by the F32 kernels (ExpFn, SigmoidFn,
// SiluFn, GeluFn, ErfFn, softmax); F64 keeps libm.
//   exp_f32: Cody-Waite range reduction x = n ln2 + r, |r| <= ln2 / 2, a degree-6 polynomial for
//     e^r (Sleef's expf_u10 coefficients), then the scaling by 2^n in two steps so that results in
//     the subnormal range round once. Within 1 ulp of the correctly rounded result over every
//     7th float bit pattern (a one-off sweep; tests/tensor/vector_math_test.cpp checks a dense
//     range and a stride over all patterns against double exp); x > 88.72... is +inf,
//     x < -103.97... is +0, NaN stays NaN.
//   erf_f32: Eigen's rational approximation (generic_fast_erf_float: x P(x^2) / Q(x^2), the input
//     clamped to [-4, 4], where erf is +-1 in float): within 6 ulp over every 61st float bit
//     pattern (the worst near x = 3.26, where erf is 0.999997: 4e-7 absolute).
#include <bit>
#include <cmath>
#include <cstdint>

namespace ruccl::cpu {

inline float exp_f32(float x) {
  constexpr float kLog2e = 1.442695040888963407359924681001892137f;
  constexpr float kLn2Hi = 0.693145751953125f;  // ln 2's upper bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = 1.428606765330187045e-06f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  constexpr float kOverflow = 88.72283935546875f;
  constexpr float kUnderflow = -103.972084045410156f;
  // Clamped (NaN becomes the lower bound: both comparisons fail) so the integer conversion below
  // always sees a finite value; the special cases are selected at the end.
  float xc = x > kUnderflow ? x : kUnderflow;
  xc = xc < kOverflow ? xc : kOverflow;
  const float n = (xc * kLog2e + kRound) - kRound;
  float r = std::fma(n, -kLn2Hi, xc);
  r = std::fma(n, -kLn2Lo, r);
  float p = 0.000198527617612853646278381f;
  p = std::fma(p, r, 0.00139304355252534151077271f);
  p = std::fma(p, r, 0.00833336077630519866943359f);
  p = std::fma(p, r, 0.0416664853692054748535156f);
  p = std::fma(p, r, 0.166666671633720397949219f);
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r * r, r) + 1.0f;
  // 2^n = 2^half * 2^(n - half), each factor a normal float for n in [-150, 128].
  const auto ni = static_cast<std::int32_t>(n);
  const std::int32_t half = ni >> 1;
  const float s1 = std::bit_cast<float>((half + 127) << 23);
  const float s2 = std::bit_cast<float>((ni - half + 127) << 23);
  float y = p * s1 * s2;
  y = x > kOverflow ? HUGE_VALF : y;
  y = x < kUnderflow ? 0.0f : y;
  return x != x ? x : y;  // NOLINT(misc-redundant-expression): the NaN test
}

inline float erf_f32(float x) {
  float c = x > 4.0f ? 4.0f : x;  // NaN passes through both
  c = c < -4.0f ? -4.0f : c;
  const float c2 = c * c;
  float p = -2.72614225801306e-10f;
  p = std::fma(c2, p, 2.77068142495902e-08f);
  p = std::fma(c2, p, -2.10102402082508e-06f);
  p = std::fma(c2, p, -5.69250639462346e-05f);
  p = std::fma(c2, p, -7.34990630326855e-04f);
  p = std::fma(c2, p, -2.95459980854025e-03f);
  p = std::fma(c2, p, -1.60960333262415e-02f);
  float q = -1.45660718464996e-05f;
  q = std::fma(c2, q, -2.13374055278905e-04f);
  q = std::fma(c2, q, -1.68282697438203e-03f);
  q = std::fma(c2, q, -7.37332916720468e-03f);
  q = std::fma(c2, q, -1.42647390514189e-02f);
  return c * (p / q);  // x times an even function: tiny x keep their precision
}

/// std::exp, through exp_f32 for float.
template <typename C>
C fast_exp(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

/// std::erf, through erf_f32 for float.
template <typename C>
C fast_erf(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return erf_f32(x);
  } else {
    return std::erf(x);
  }
}

}  // namespace ruccl::cpu
