#pragma once
// Element types. F16 and BF16 are storage types: conversions to and from float are exact where the
// value is representable (round to nearest even otherwise); CPU arithmetic on them runs in F32.
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string_view>

namespace ruccl {

/// The element type of a tensor.
enum class DType : std::uint8_t { F16, BF16, F32, F64, I32, I64, Bool };

/// Bytes per element.
std::size_t dtype_size(DType dtype);
/// "F32", "I64", ...
std::string_view dtype_name(DType dtype);
/// F16, BF16, F32, F64.
bool is_floating(DType dtype);
/// I32, I64 (Bool is not an integer type for arithmetic).
bool is_integral(DType dtype);
/// The type two operands promote to (PyTorch's rules restricted to our dtypes): floating beats
/// integral beats Bool; within a kind the wider wins; F16 with BF16 gives F32.
DType promote_types(DType a, DType b);
std::ostream& operator<<(std::ostream& out, DType dtype);

/// IEEE 754 binary16, stored as bits.
struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  explicit Half(float value);
  explicit operator float() const;
};

/// bfloat16 (the top half of a binary32), stored as bits.
struct BFloat16 {
  std::uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value);
  explicit operator float() const;
};

/// Maps a C++ element type to its DType: dtype_of<float>() == DType::F32.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<Half>() {
  return DType::F16;
}
template <>
constexpr DType dtype_of<BFloat16>() {
  return DType::BF16;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}

/// Calls `fn(T{})` with T the C++ type of `dtype` (Half, BFloat16, float, double, int32_t,
/// int64_t, bool). The one place a runtime dtype becomes a compile-time type.
template <typename Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F16:
      return fn(Half{});
    case DType::BF16:
      return fn(BFloat16{});
    case DType::F32:
      return fn(float{});
    case DType::F64:
      return fn(double{});
    case DType::I32:
      return fn(std::int32_t{});
    case DType::I64:
      return fn(std::int64_t{});
    case DType::Bool:
      return fn(bool{});
  }
  return fn(float{});  // unreachable: every enumerator is handled above
}

}  // namespace ruccl
