// to_vector<T>() / item<T>() read any dtype as any element type, with torch's item<T>() rules
// (truncation toward zero, "!= 0" to bool), and refuse a value T cannot hold with a message naming
// the method actually called.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tensor/tensor.h"

using namespace ruccl;

namespace {

constexpr DType kAll[] = {DType::F16, DType::BF16, DType::F32, DType::F64,
                          DType::I32, DType::I64,  DType::Bool};

// {0, 1, -2, 3} in `dtype` (Bool: {false, true, true, false}), exact in every dtype.
Tensor small_values(DType dtype) {
  if (dtype == DType::Bool) return Tensor::from_vector<bool>({false, true, true, false});
  return Tensor::from_vector<std::int64_t>({0, 1, -2, 3}).to(dtype);
}

// What reading small_values(from) as T must give, as doubles.
std::vector<double> expected_values(DType from, DType to) {
  std::vector<double> v =
      from == DType::Bool ? std::vector<double>{0, 1, 1, 0} : std::vector<double>{0, 1, -2, 3};
  if (to == DType::Bool) {
    for (double& e : v) e = e != 0 ? 1 : 0;
  }
  return v;
}

template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
void check_reads(DType from) {
  const DType to = dtype_of<T>();
  INFO("from " << from << " to " << to);
  const Tensor t = small_values(from);
  const std::vector<double> want = expected_values(from, to);
  const std::vector<T> got = t.to_vector<T>();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK(as_double(got[i]) == want[i]);
    CHECK(as_double(t.select(0, static_cast<std::int64_t>(i)).item<T>()) == want[i]);
  }
}

}  // namespace

TEST_CASE("to_vector and item read every dtype as every element type", "[tensor]") {
  for (DType from : kAll) {
    check_reads<Half>(from);
    check_reads<BFloat16>(from);
    check_reads<float>(from);
    check_reads<double>(from);
    check_reads<std::int32_t>(from);
    check_reads<std::int64_t>(from);
    check_reads<bool>(from);
  }
  CHECK(Tensor::full({}, 3, DType::I64).item<double>() == 3.0);
  CHECK(Tensor::full({}, 3, DType::I64).item<float>() == 3.0f);
  CHECK(Tensor::full({}, 2.5, DType::F64).item<std::int64_t>() == 2);
  // A strided source reads in row-major order; an empty one gives nothing.
  const Tensor m = Tensor::from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1);
  CHECK(m.to_vector<double>() == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(Tensor::zeros({0, 3}, DType::I64).to_vector<float>().empty());
}

TEST_CASE("reads convert as torch's item: truncation bool rounding NaN and infinities",
          "[tensor]") {
  const Tensor f = Tensor::from_vector<double>({2.75, -2.75, -0.5, 0.0, -0.0});
  CHECK(f.to_vector<std::int32_t>() == std::vector<std::int32_t>{2, -2, 0, 0, 0});
  CHECK(f.to_vector<std::int64_t>() == std::vector<std::int64_t>{2, -2, 0, 0, 0});
  CHECK(f.to_vector<bool>() == std::vector<bool>{true, true, true, false, false});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(Tensor::scalar(nan, DType::F32).item<bool>());  // bool(nan) is True
  CHECK(std::isnan(Tensor::scalar(nan, DType::F32).item<double>()));
  CHECK(Tensor::scalar(-inf, DType::F64).item<float>() == -std::numeric_limits<float>::infinity());
  CHECK(std::isinf(static_cast<float>(Tensor::scalar(inf, DType::F64).item<Half>())));
  // Integers: exact to int64, and to double with one rounding (2^53 + 1 -> 2^53).
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  CHECK(Tensor::scalar(big, DType::I64).item<std::int64_t>() == big);
  CHECK(Tensor::scalar(big, DType::I64).item<double>() == 9007199254740992.0);
  CHECK(Tensor::scalar(INT64_MIN, DType::I64).item<double>() == -9223372036854775808.0);
  CHECK(Tensor::scalar(-9223372036854775808.0, DType::F64).item<std::int64_t>() == INT64_MIN);
  CHECK(Tensor::scalar(2147483647, DType::I64).item<std::int32_t>() == 2147483647);
  CHECK(Tensor::scalar(-2147483648.9, DType::F64).item<std::int32_t>() == INT32_MIN);
  CHECK(static_cast<float>(Tensor::scalar(65504.0, DType::F64).item<Half>()) == 65504.0f);
  CHECK(static_cast<float>(Tensor::scalar(1e38, DType::F32).item<BFloat16>()) ==
        Approx(1e38).epsilon(1e-2));
}

TEST_CASE("a value the element type cannot hold is refused naming the method called", "[tensor]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(Tensor::scalar(3e9, DType::F64).item<std::int32_t>(), ValueError);
  CHECK_THROWS_WITH(Tensor::scalar(3e9, DType::F64).item<std::int32_t>(),
                    "Tensor::item: expected a value that I32 can hold, got 3e+09 (F64)");
  CHECK_THROWS_WITH(
      Tensor::from_vector<float>({1, static_cast<float>(nan)}).to_vector<std::int64_t>(),
      "Tensor::to_vector: expected values that I64 can hold, got nan (F32) at "
      "element [1]");
  CHECK_THROWS_WITH(Tensor::scalar(inf, DType::F16).item<std::int64_t>(),
                    "Tensor::item: expected a value that I64 can hold, got inf (F16)");
  CHECK_THROWS_WITH(Tensor::scalar(9223372036854775808.0, DType::F64).item<std::int64_t>(),
                    Catch::Contains("Tensor::item: expected a value that I64 can hold"));
  CHECK_THROWS_WITH(Tensor::scalar(std::int64_t{1} << 40, DType::I64).item<std::int32_t>(),
                    "Tensor::item: expected a value that I32 can hold, got 1099511627776 (I64)");
  CHECK_THROWS_WITH(Tensor::scalar(1e300, DType::F64).item<float>(),
                    "Tensor::item: expected a value that F32 can hold, got 1e+300 (F64)");
  CHECK_THROWS_WITH(Tensor::scalar(70000, DType::I64).item<Half>(),
                    "Tensor::item: expected a value that F16 can hold, got 70000 (I64)");
  CHECK_THROWS_WITH(Tensor::scalar(1e39, DType::F64).item<BFloat16>(),
                    Catch::Contains("expected a value that BF16 can hold, got 1e+39 (F64)"));
  const Tensor grid = Tensor::from_vector<double>({0, 1, 2, inf, 4, 5}, {2, 3});
  CHECK_THROWS_WITH(grid.to_vector<std::int32_t>(), Catch::Contains("at element [1, 0]"));
  // The other refusals name item too.
  CHECK_THROWS_WITH(Tensor().item<float>(),
                    "Tensor::item: expected a defined tensor, got an undefined one");
  CHECK_THROWS_WITH(Tensor::zeros({2}).item<float>(),
                    Catch::Contains("Tensor::item: expected a tensor with exactly 1 element"));
}
