#pragma once
// Scalar: a number passed to fill/full and to tensor-scalar ops, kept exact for 64-bit integers.
#include <cstdint>
#include <type_traits>

namespace ruccl {

/// A double or an int64, whichever it was made from (an I64 of 2^53 + 1 survives).
class Scalar {
 public:
  Scalar(double v) : f_(v), i_(0), is_int_(false) {}   // NOLINT
  Scalar(float v) : Scalar(static_cast<double>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Scalar(T v)
      : f_(static_cast<double>(v)), i_(static_cast<std::int64_t>(v)), is_int_(true) {}  // NOLINT

  bool is_integral() const { return is_int_; }
  double to_double() const { return f_; }
  std::int64_t to_int() const { return to<std::int64_t>(); }
  template <typename T>
  T to() const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(is_int_ ? i_ : static_cast<std::int64_t>(f_));
    } else {
      return static_cast<T>(is_int_ ? static_cast<double>(i_) : f_);
    }
  }

 private:
  double f_;
  std::int64_t i_;
  bool is_int_;
};

}  // namespace ruccl
