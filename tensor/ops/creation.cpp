// Tensor::arange, randn, rand, randperm. Values are made on the host (the Generator is a host
// algorithm, so a seed gives the same tensor on every device) and uploaded once.
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "tensor/core/tensor.h"
#include "tensor/random/generator.h"

namespace ruccl {

namespace {

void check_count(std::int64_t n, const char* op) {
  RUCCL_CHECK(n >= 0, ShapeError, op, ": expected a non-negative element count, got ", n);
}

// Uploads host values of type T as a tensor of `dtype` on `device`.
template <typename T>
Tensor upload(std::vector<T> values, const Shape& shape, DType dtype, Device device) {
  return Tensor::from_vector<T>(values, shape).to(dtype).to(device);
}

}  // namespace

Tensor Tensor::arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype,
                      Device device) {
  const bool integral_args = start.is_integral() && end.is_integral() && step.is_integral();
  const DType out = dtype.value_or(integral_args ? DType::I64 : DType::F32);
  if (is_integral(out)) {  // exact int64 arithmetic, torch's truncation of float arguments
    const std::int64_t s = start.to_int();
    const std::int64_t e = end.to_int();
    const std::int64_t d = step.to_int();
    RUCCL_CHECK(d != 0, ValueError, "Tensor::arange: expected a non-zero step, got ",
                step.to_double(), " (", d, " as an integer for ", out, ")");
    RUCCL_CHECK((d > 0 && e >= s) || (d < 0 && e <= s), ValueError,
                "Tensor::arange: expected a step pointing from start to end, got start ", s,
                ", end ", e, ", step ", d);
    const std::int64_t span = d > 0 ? e - s : s - e;
    const std::int64_t stride = d > 0 ? d : -d;
    const std::int64_t n = span / stride + (span % stride != 0 ? 1 : 0);
    std::vector<std::int64_t> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = s + i * d;
    return upload(std::move(values), Shape{n}, out, device);
  }
  const double s = start.to_double();
  const double e = end.to_double();
  const double d = step.to_double();
  RUCCL_CHECK(std::isfinite(s) && std::isfinite(e), ValueError,
              "Tensor::arange: expected finite start and end, got ", s, " and ", e);
  RUCCL_CHECK(d != 0 && std::isfinite(d), ValueError,
              "Tensor::arange: expected a finite non-zero step, got ", d);
  RUCCL_CHECK((d > 0 && e >= s) || (d < 0 && e <= s), ValueError,
              "Tensor::arange: expected a step pointing from start to end, got start ", s, ", end ",
              e, ", step ", d);
  const double count = std::ceil((e - s) / d);
  RUCCL_CHECK(count < static_cast<double>(std::numeric_limits<std::int64_t>::max()), ShapeError,
              "Tensor::arange: expected fewer than 2^63 elements, got ", count);
  const auto n = static_cast<std::int64_t>(count);
  std::vector<double> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    values[static_cast<std::size_t>(i)] = s + static_cast<double>(i) * d;
  }
  return upload(std::move(values), Shape{n}, out, device);
}

Tensor Tensor::rand(const Shape& shape, Generator& gen, DType dtype, Device device) {
  RUCCL_CHECK(is_floating(dtype), DTypeError, "Tensor::rand: expected a floating dtype, got ",
              dtype);
  const std::int64_t n = shape.numel();
  if (dtype == DType::F64) {
    std::vector<double> values(static_cast<std::size_t>(n));
    for (double& v : values) v = gen.next_double();
    return upload(std::move(values), shape, dtype, device);
  }
  // As many random bits as the dtype's significand holds, so rounding can never reach 1.0.
  const int bits = dtype == DType::F32 ? 24 : dtype == DType::F16 ? 11 : 8;
  const float scale = std::ldexp(1.0f, -bits);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = static_cast<float>(gen.next_u32() >> (32 - bits)) * scale;
  return upload(std::move(values), shape, dtype, device);
}

Tensor Tensor::randn(const Shape& shape, Generator& gen, DType dtype, Device device) {
  RUCCL_CHECK(is_floating(dtype), DTypeError, "Tensor::randn: expected a floating dtype, got ",
              dtype);
  std::vector<double> values(static_cast<std::size_t>(shape.numel()));
  for (double& v : values) v = gen.next_normal();
  return upload(std::move(values), shape, dtype, device);
}

Tensor Tensor::randperm(std::int64_t n, Generator& gen, Device device) {
  check_count(n, "Tensor::randperm");
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), std::int64_t{0});
  for (std::int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, from the end
    const auto j = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(values[static_cast<std::size_t>(i)], values[static_cast<std::size_t>(j)]);
  }
  return upload(std::move(values), Shape{n}, DType::I64, device);
}

}  // namespace ruccl
