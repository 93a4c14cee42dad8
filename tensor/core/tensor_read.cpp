// Tensor::copy_to_host_as: reading values as another element type (to_vector<T>, item<T>), with
// torch's item<T>() rules: truncation toward zero to integers, "!= 0" to bool, and a ValueError
// for a value the target cannot hold (checked_convert's "cannot be converted without overflow").
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "tensor/core/tensor.h"

namespace ruccl {

namespace {

template <typename T>
constexpr bool kIsFloating = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                             std::is_same_v<T, float> || std::is_same_v<T, double>;

// Half and BFloat16 widen through float (exactly); the others are already C++ arithmetic types.
template <typename T>
auto widen(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

// The largest finite value of a floating target, as a double.
template <typename To>
double floating_max() {
  if constexpr (std::is_same_v<To, Half>) {
    return 65504.0;
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
  } else {
    return static_cast<double>(std::numeric_limits<To>::max());
  }
}

// Converts one value; false when `To` cannot hold it.
template <typename To, typename From>
bool convert(From from, To& out) {
  const auto v = widen(from);
  using Wide = std::remove_cv_t<decltype(v)>;
  if constexpr (std::is_same_v<To, bool>) {
    out = v != Wide{0};  // NaN != 0: true, as torch's bool(nan)
    return true;
  } else if constexpr (std::is_same_v<Wide, bool>) {
    out = To(v ? 1.0f : 0.0f);
    return true;
  } else if constexpr (kIsFloating<To>) {
    const double d = static_cast<double>(v);  // exact for every source but int64 (rounds)
    if (std::isfinite(d) && std::fabs(d) > floating_max<To>()) return false;
    if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
      out = To(static_cast<float>(d));
    } else if constexpr (std::is_integral_v<Wide>) {
      out = static_cast<To>(v);  // int64 -> float rounds once (not through double)
    } else {
      out = static_cast<To>(d);
    }
    return true;
  } else if constexpr (std::is_integral_v<Wide>) {  // integer to integer
    if (!std::in_range<To>(v)) return false;
    out = static_cast<To>(v);
    return true;
  } else {  // floating to integer: truncate toward zero
    if (!std::isfinite(v)) return false;
    const double t = std::trunc(static_cast<double>(v));
    // -2^63 and 2^63 are exact doubles; for int32 the bounds are exact too.
    const double lo = static_cast<double>(std::numeric_limits<To>::min());
    const double hi_exclusive = -2.0 * static_cast<double>(std::numeric_limits<To>::min() / 2);
    if (t < lo || t >= hi_exclusive) return false;
    out = static_cast<To>(t);
    return true;
  }
}

// A value for a message: integers exactly, floating values as doubles.
template <typename T>
std::string describe(T v) {
  const auto w = widen(v);
  if constexpr (std::is_integral_v<std::remove_cv_t<decltype(w)>>) {
    return str(static_cast<std::int64_t>(w));
  } else {
    return str(static_cast<double>(w));
  }
}

}  // namespace

void Tensor::copy_to_host_as(DType target, void* dst, const char* op) const {
  if (numel_ == 0) return;
  const Tensor c = contiguous();
  std::vector<unsigned char> native(c.nbytes());
  c.copy_to_host(native.data());
  visit_dtype(dtype_, [&](auto from_tag) {
    using From = decltype(from_tag);
    visit_dtype(target, [&](auto to_tag) {
      using To = decltype(to_tag);
      using Stored = std::conditional_t<std::is_same_v<To, bool>, std::uint8_t, To>;
      auto* out = static_cast<Stored*>(dst);
      for (std::int64_t i = 0; i < numel_; ++i) {
        From v;
        std::memcpy(&v, native.data() + static_cast<std::size_t>(i) * sizeof(From), sizeof(From));
        To converted{};
        if (!convert(v, converted)) [[unlikely]] {
          const std::string where =
              numel_ == 1 ? std::string() : str(" at element ", unravel_index(i, shape_));
          throw ValueError(str(op, ": expected ", numel_ == 1 ? "a value" : "values", " that ",
                               target, " can hold, got ", describe(v), " (", dtype_, ")", where));
        }
        if constexpr (std::is_same_v<To, bool>) {
          out[i] = converted ? 1 : 0;
        } else {
          out[i] = converted;
        }
      }
    });
  });
}

}  // namespace ruccl
