// The tensor matchers themselves: they must reject what differs and say where.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tests/support/tensor_matchers.h"

using ruccl::DType;
using ruccl::Shape;
using ruccl::Tensor;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

TEST_CASE("TensorNear accepts values within tolerance and names the worst index otherwise",
          "[tensor]") {
  const Tensor e = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor close = Tensor::from_vector<float>({1, 2, 3.00001f, 4, 5, 6}, Shape{2, 3});
  CHECK_THAT(close, TensorNear(e, 1e-5, 0));
  const Tensor off = Tensor::from_vector<float>({1, 2.5f, 3, 4, 5, 9}, Shape{2, 3});
  auto m = TensorNear(e, 1e-5, 1e-6);
  CHECK_FALSE(m.match(off));
  const std::string text = m.describe();
  CHECK_THAT(text, Catch::Contains("2 of 6 elements differ"));
  CHECK_THAT(text, Catch::Contains("worst at index [1, 2]"));
  CHECK_THAT(text, Catch::Contains("actual 9, expected 6"));
  CHECK_THAT(text, Catch::Contains("[2, 3]"));
}

TEST_CASE("TensorNear rejects other shapes and dtypes unless any_dtype is asked for", "[tensor]") {
  const Tensor e = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  auto shape = TensorNear(e);
  CHECK_FALSE(shape.match(Tensor::from_vector<float>({1, 2, 3, 4}, Shape{4})));
  CHECK_THAT(shape.describe(), Catch::Contains("shapes differ: actual [4], expected [2, 2]"));
  const Tensor d = Tensor::from_vector<double>({1, 2, 3, 4}, Shape{2, 2});
  auto dtype = TensorNear(e);
  CHECK_FALSE(dtype.match(d));
  CHECK_THAT(dtype.describe(), Catch::Contains("dtypes differ: actual F64, expected F32"));
  CHECK_THAT(d, TensorNear(e).any_dtype());
}

TEST_CASE("Tensor matchers treat NaN and infinity positionally", "[tensor]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor e = Tensor::from_vector<float>({nan, inf, 1});
  CHECK_THAT(Tensor::from_vector<float>({nan, inf, 1}), TensorEqual(e));
  CHECK_FALSE(TensorNear(e, 1, 1).match(Tensor::from_vector<float>({0, inf, 1})));
  CHECK_FALSE(TensorNear(e, 1, 1).match(Tensor::from_vector<float>({nan, -inf, 1})));
  CHECK_FALSE(TensorNear(e, 1, 1).match(Tensor::from_vector<float>({nan, inf, nan})));
}

TEST_CASE("TensorEqual compares I64 exactly above 2^53 and works on strided views", "[tensor]") {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const Tensor e = Tensor::from_vector<std::int64_t>({big, 2});
  CHECK_THAT(Tensor::from_vector<std::int64_t>({big, 2}), TensorEqual(e));
  auto m = TensorEqual(e);
  CHECK_FALSE(m.match(Tensor::from_vector<std::int64_t>({big - 1, 2})));
  CHECK_THAT(m.describe(), Catch::Contains("actual 9007199254740992, expected 9007199254740993"));
  const Tensor t = Tensor::from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  CHECK_THAT(t.transpose(0, 1),
             TensorEqual(Tensor::from_vector<std::int32_t>({1, 4, 2, 5, 3, 6}, Shape{3, 2})));
}
