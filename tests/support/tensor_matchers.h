#pragma once
// Catch2 matchers that compare tensors element by element and, on failure, print the shape, how
// many elements differ, the worst index and both values there.
//
//   REQUIRE_THAT(actual, TensorNear(expected, 1e-6, 1e-7));   // |a - e| <= atol + rtol * |e|
//   REQUIRE_THAT(actual, TensorEqual(expected));              // same dtype, shape, every value
//
// Both require the same shape and (unless `.any_dtype()` is asked for) the same dtype. NaN matches
// NaN at the same position (a test states where it expects NaN) but nothing else; an infinity
// matches only the same infinity. Integer and Bool tensors are compared exactly through I64, so
// I64 values above 2^53 are not rounded. The comparison only needs Tensor::to(DType) and
// to_vector, so it works for any device and any strides.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl::testing {

/// The elements of `t` as doubles in row-major order (any dtype, any strides).
inline std::vector<double> tensor_values_f64(const Tensor& t) {
  return t.to(DType::F64).to_vector<double>();
}

/// The elements of an integer or Bool tensor as int64 in row-major order, exactly.
inline std::vector<std::int64_t> tensor_values_i64(const Tensor& t) {
  return t.to(DType::I64).to_vector<std::int64_t>();
}

/// The bytes of `t`'s elements in row-major order (for bit-identity checks: NaN payloads and
/// signed zeros included).
inline std::vector<std::uint8_t> tensor_bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(c.nbytes()));
  if (!out.empty()) std::memcpy(out.data(), c.data_ptr(), out.size());
  return out;
}

/// Matches a tensor whose elements are within atol + rtol * |expected| of `expected`'s (or exactly
/// equal, for TensorEqual). See the file comment for NaN, infinity and integer handling.
class TensorCloseMatcher : public Catch::MatcherBase<Tensor> {
 public:
  TensorCloseMatcher(Tensor expected, double rtol, double atol, bool exact)
      : expected_(std::move(expected)), rtol_(rtol), atol_(atol), exact_(exact) {}

  /// Compare values only: a result of another dtype (say F32 against F64 golden data) may match.
  TensorCloseMatcher& any_dtype() {
    check_dtype_ = false;
    return *this;
  }

  bool match(const Tensor& actual) const override {
    detail_.clear();
    if (!actual.defined() || !expected_.defined()) {
      detail_ = actual.defined() ? "; the expected tensor is undefined" : "; actual is undefined";
      return false;
    }
    if (actual.shape() != expected_.shape()) {
      detail_ = "; shapes differ: actual " + actual.shape().to_string() + ", expected " +
                expected_.shape().to_string();
      return false;
    }
    if (check_dtype_ && actual.dtype() != expected_.dtype()) {
      std::ostringstream out;
      out << "; dtypes differ: actual " << actual.dtype() << ", expected " << expected_.dtype();
      detail_ = out.str();
      return false;
    }
    const bool integers = !is_floating(actual.dtype()) && !is_floating(expected_.dtype());
    return integers ? match_integers(actual) : match_floats(actual);
  }

  std::string describe() const override {
    std::ostringstream out;
    // The shape and dtype first: the values (operator<<) are summarised beyond 1000 elements.
    out << (exact_ ? "equals the " : "is near the ") << expected_.shape() << " "
        << expected_.dtype() << " tensor " << expected_;
    if (!exact_) out << " (rtol " << rtol_ << ", atol " << atol_ << ")";
    out << detail_;
    return out.str();
  }

 private:
  bool match_integers(const Tensor& actual) const {
    const std::vector<std::int64_t> a = tensor_values_i64(actual);
    const std::vector<std::int64_t> e = tensor_values_i64(expected_);
    std::int64_t bad = 0;
    std::int64_t first = -1;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] != e[i]) {
        if (first < 0) first = static_cast<std::int64_t>(i);
        ++bad;
      }
    }
    if (bad == 0) return true;
    std::ostringstream out;
    const auto f = static_cast<std::size_t>(first);
    out << "; " << bad << " of " << a.size() << " elements differ; first at index "
        << unravel_index(first, actual.shape()) << ": actual " << a[f] << ", expected " << e[f];
    detail_ = out.str();
    return false;
  }

  bool match_floats(const Tensor& actual) const {
    const std::vector<double> a = tensor_values_f64(actual);
    const std::vector<double> e = tensor_values_f64(expected_);
    std::int64_t bad = 0;
    std::int64_t worst = -1;
    double worst_excess = -1.0;  // |diff| / tolerance, infinite for NaN or infinity mismatches
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double x = a[i];
      const double y = e[i];
      double excess = 0.0;
      if (std::isnan(x) || std::isnan(y)) {
        if (std::isnan(x) && std::isnan(y)) continue;
        excess = std::numeric_limits<double>::infinity();
      } else if (std::isinf(x) || std::isinf(y)) {
        if (x == y) continue;
        excess = std::numeric_limits<double>::infinity();
      } else {
        const double diff = std::fabs(x - y);
        const double tol = exact_ ? 0.0 : atol_ + rtol_ * std::fabs(y);
        if (diff <= tol) continue;
        excess = tol > 0.0 ? diff / tol : std::numeric_limits<double>::max();
      }
      ++bad;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = static_cast<std::int64_t>(i);
      }
    }
    if (bad == 0) return true;
    const auto w = static_cast<std::size_t>(worst);
    std::ostringstream out;
    out.precision(17);
    out << "; " << bad << " of " << a.size() << " elements differ; worst at index "
        << unravel_index(worst, actual.shape()) << ": actual " << a[w] << ", expected " << e[w]
        << " (|diff| " << std::fabs(a[w] - e[w]);
    if (!exact_) out << ", allowed " << atol_ + rtol_ * std::fabs(e[w]);
    out << ")";
    detail_ = out.str();
    return false;
  }

  Tensor expected_;
  double rtol_;
  double atol_;
  bool exact_;
  bool check_dtype_ = true;
  mutable std::string detail_;
};

/// Elementwise |actual - expected| <= atol + rtol * |expected| (torch.allclose's rule), same shape
/// and dtype.
inline TensorCloseMatcher TensorNear(const Tensor& expected, double rtol = 1e-5,
                                     double atol = 1e-8) {
  return TensorCloseMatcher(expected, rtol, atol, /*exact=*/false);
}

/// Same shape, same dtype, every element equal (NaN matches NaN at the same position).
inline TensorCloseMatcher TensorEqual(const Tensor& expected) {
  return TensorCloseMatcher(expected, 0.0, 0.0, /*exact=*/true);
}

}  // namespace ruccl::testing
