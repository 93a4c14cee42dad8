#include "tensor/core/dtype.h"

#include <bit>
#include <cmath>

#include "tensor/core/error.h"

namespace ruccl {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::Bool:
      return 1;
  }
  RUCCL_ASSERT(false, "unknown dtype ", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::F32:
      return "F32";
    case DType::F64:
      return "F64";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
    case DType::Bool:
      return "Bool";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 || dtype == DType::F64;
}

bool is_integral(DType dtype) { return dtype == DType::I32 || dtype == DType::I64; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  auto rank = [](DType d) {
    switch (d) {
      case DType::Bool:
        return 0;
      case DType::I32:
        return 1;
      case DType::I64:
        return 2;
      case DType::F16:
      case DType::BF16:
        return 3;
      case DType::F32:
        return 4;
      case DType::F64:
        return 5;
    }
    return 0;
  };
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) {
    return DType::F32;
  }
  return rank(a) >= rank(b) ? a : b;
}

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

// binary16 <-> binary32, round to nearest even; NaN stays NaN, overflow goes to infinity.
Half::Half(float value) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    bits = static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow
    bits = static_cast<std::uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // Scale so the subnormal's integer mantissa lands in the low bits, letting the FPU round.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24
    const std::uint32_t m = static_cast<std::uint32_t>(std::nearbyint(scaled));
    bits = static_cast<std::uint16_t>(sign | m);
    return;
  }
  std::uint32_t mant = abs & 0x7fffffu;
  std::uint32_t exp = (abs >> 23) - 127 + 15;
  std::uint32_t h = (exp << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
  bits = static_cast<std::uint16_t>(sign | h);
}

Half::operator float() const {
  const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  const std::uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

BFloat16::BFloat16(float value) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet and a NaN
    bits = static_cast<std::uint16_t>((f >> 16) | 0x40u);
    return;
  }
  const std::uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  bits = static_cast<std::uint16_t>((f + rounding) >> 16);
}

BFloat16::operator float() const {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace ruccl
