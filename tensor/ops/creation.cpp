// Tensor::arange, randn, rand, randperm. Values are made on the host (the Generator is a host
// algorithm, so a seed gives the same tensor on every device), written straight into a CPU
// tensor, then converted to the requested dtype and moved to the device.
#include <cmath>
#include <limits>
#include <utility>

#include "tensor/core/tensor.h"
#include "tensor/random/generator.h"

namespace ruccl {

namespace {

// A CPU tensor of T with element i = value(i), as `dtype` on `device`; errors name `op`.
template <typename T, typename Value>
Tensor host_tensor(const char* op, const Shape& shape, DType dtype, Device device, Value&& value) {
  Tensor t = Tensor::empty(shape, dtype_of<T>(), Device::cpu(), op);
  T* p = t.data<T>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = value(i);
  return t.to(dtype).to(device);
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
    // |end - start| and |step| as unsigned: both fit even for the extreme int64 values.
    const std::uint64_t span = d > 0
                                   ? static_cast<std::uint64_t>(e) - static_cast<std::uint64_t>(s)
                                   : static_cast<std::uint64_t>(s) - static_cast<std::uint64_t>(e);
    const std::uint64_t stride =
        d > 0 ? static_cast<std::uint64_t>(d) : std::uint64_t{0} - static_cast<std::uint64_t>(d);
    const std::uint64_t count = span / stride + (span % stride != 0 ? 1 : 0);
    RUCCL_CHECK(count <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                ShapeError, "Tensor::arange: expected fewer than 2^63 elements, got ", count);
    // start + i * step lies between start and end for every i < count, but i * step alone may
    // not fit: compute modulo 2^64 (exact, since the sum fits).
    return host_tensor<std::int64_t>(
        "Tensor::arange", Shape{static_cast<std::int64_t>(count)}, out, device,
        [s, d](std::int64_t i) {
          return static_cast<std::int64_t>(static_cast<std::uint64_t>(s) +
                                           static_cast<std::uint64_t>(i) *
                                               static_cast<std::uint64_t>(d));
        });
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
  return host_tensor<double>("Tensor::arange", Shape{static_cast<std::int64_t>(count)}, out, device,
                             [s, d](std::int64_t i) { return s + static_cast<double>(i) * d; });
}

Tensor Tensor::rand(const Shape& shape, Generator& gen, DType dtype, Device device) {
  RUCCL_CHECK(is_floating(dtype), DTypeError, "Tensor::rand: expected a floating dtype, got ",
              dtype);
  if (dtype == DType::F64) {
    return host_tensor<double>("Tensor::rand", shape, dtype, device,
                               [&](std::int64_t) { return gen.next_double(); });
  }
  // As many random bits as the dtype's significand holds, so rounding can never reach 1.0.
  const int bits = dtype == DType::F32 ? 24 : dtype == DType::F16 ? 11 : 8;
  const float scale = std::ldexp(1.0f, -bits);
  return host_tensor<float>("Tensor::rand", shape, dtype, device, [&](std::int64_t) {
    return static_cast<float>(gen.next_u32() >> (32 - bits)) * scale;
  });
}

Tensor Tensor::randn(const Shape& shape, Generator& gen, DType dtype, Device device) {
  RUCCL_CHECK(is_floating(dtype), DTypeError, "Tensor::randn: expected a floating dtype, got ",
              dtype);
  return host_tensor<double>("Tensor::randn", shape, dtype, device,
                             [&](std::int64_t) { return gen.next_normal(); });
}

Tensor Tensor::randperm(std::int64_t n, Generator& gen, Device device) {
  RUCCL_CHECK(n >= 0, ShapeError, "Tensor::randperm: expected a non-negative count, got ", n);
  Tensor t = host_tensor<std::int64_t>("Tensor::randperm", Shape{n}, DType::I64, Device::cpu(),
                                       [](std::int64_t i) { return i; });
  std::int64_t* p = t.data<std::int64_t>();
  for (std::int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, from the end
    const auto j = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[i], p[j]);
  }
  return t.to(device);
}

}  // namespace ruccl
