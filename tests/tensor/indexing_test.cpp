// Tensor::index / index_put_ with ruccl::indexing (Slice, None, Ellipsis, integers, one tensor):
// values against PyTorch, views where torch gives views, and errors naming dim, index and size.
#include <catch2/catch.hpp>

#include <type_traits>

#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_tensors.h"
#include "tests/tensor/indexing_patterns.h"

using namespace ruccl;
using namespace ruccl::indexing;
using ruccl::testing::TensorEqual;

namespace {

Tensor f32(std::vector<float> v, const Shape& s) { return Tensor::from_vector<float>(v, s); }

}  // namespace

static_assert(!std::is_constructible_v<TensorIndex, bool>, "torch's True/False are refused");

TEST_CASE("Tensor::index matches PyTorch's x(...) indexing for every golden pattern", "[tensor]") {
  const Tensor x = ruccl::testing::indexing_golden().at("input").at("x");
  for (const auto& [name, pattern] : ruccl::testing::golden_patterns()) {
    INFO("pattern " << name);
    const Tensor expected = ruccl::testing::indexing_golden().at(name).at("out");
    CHECK_THAT(x.index(std::span<const TensorIndex>(pattern)), TensorEqual(expected));
    CHECK_THAT(index(x, std::span<const TensorIndex>(pattern)), TensorEqual(expected));
    // The same pattern on a non-contiguous copy of x (its strides differ) gives the same values.
    const Tensor strided = x.permute({2, 0, 1}).contiguous().permute({1, 2, 0});
    REQUIRE_FALSE(strided.is_contiguous());
    CHECK_THAT(strided.index(std::span<const TensorIndex>(pattern)), TensorEqual(expected));
  }
}

TEST_CASE("integers slices None and Ellipsis give views and a tensor index copies", "[tensor]") {
  const Tensor x = Tensor::arange(0, 60, 1, DType::F32).reshape({3, 4, 5});
  const Tensor v = x.index({Slice(), Slice(1, None), Slice(None, None, 2)});
  CHECK(v.storage() == x.storage());
  CHECK(v.shape() == Shape{3, 3, 3});
  CHECK(v.strides() == Shape{20, 5, 2});  // the step is a stride: no copy
  CHECK(v.offset() == 5);
  CHECK(x.index({1, 2}).shape() == Shape{5});
  CHECK(x.index({1, 2}).to_vector<float>() == std::vector<float>{30, 31, 32, 33, 34});
  CHECK(x.index({Ellipsis, 0}).shape() == Shape{3, 4});
  CHECK(x.index({"...", 0}).shape() == Shape{3, 4});  // libtorch's "..." spelling
  CHECK(x.index({None}).shape() == Shape{1, 3, 4, 5});
  CHECK(x.index({Slice(), None, 0, None}).shape() == Shape{3, 1, 1, 5});
  CHECK(x.index({}).storage() == x.storage());
  CHECK(x.index({Ellipsis, 1, 2, 3}).item<float>() == 33);  // Ellipsis of zero dims
  CHECK(x.index({2, 3, 4}).shape() == Shape{});
  CHECK(x.index({2, 3, 4}).item<float>() == 59);
  // Python's clamping: an over-long slice stops at the end, a reversed one is empty.
  CHECK(x.index({Slice(1, 100)}).shape() == Shape{2, 4, 5});
  CHECK(x.index({Slice(3, 1)}).shape() == Shape{0, 4, 5});
  CHECK(x.index({Slice(INT64_MIN, INT64_MAX, INT64_MAX)}).shape() == Shape{1, 4, 5});
  const Tensor picked = x.index({Slice(), Tensor::from_vector<std::int64_t>({3, 0})});
  CHECK(picked.storage() != x.storage());
  CHECK(picked.shape() == Shape{3, 2, 5});
  CHECK_THAT(picked.index({Slice(), 0}), TensorEqual(x.index({Slice(), 3})));
  // I32 indices and a Bool mask select along their dim.
  const Tensor i32 = Tensor::from_vector<std::int32_t>({-1, 1});
  CHECK_THAT(x.index({Slice(), Slice(), i32}).index({0, 0}), TensorEqual(f32({4, 1}, {2})));
  const Tensor mask = Tensor::from_vector<bool>({false, true, true});
  CHECK_THAT(x.index({mask, 0, 0}), TensorEqual(f32({20, 40}, {2})));
  CHECK(x.index({Tensor::zeros({0}, DType::I64)}).shape() == Shape{0, 4, 5});
  // An empty input indexes like any other (and its view touches nothing).
  const Tensor none = Tensor::zeros({0, 4});
  CHECK(none.index({Slice(), 2}).shape() == Shape{0});
  CHECK(none.index({Slice(), Slice(1, None, 2)}).shape() == Shape{0, 2});
}

TEST_CASE("Tensor::index errors name the dim the index and the size", "[tensor]") {
  const Tensor x = Tensor::zeros({3, 4});
  CHECK_THROWS_AS(x.index({0, 7}), IndexError);
  CHECK_THROWS_WITH(x.index({0, 7}),
                    "Tensor::index: expected an index in [-4, 4) for dim 1 of size 4, got 7");
  CHECK_THROWS_WITH(x.index({-4}),
                    "Tensor::index: expected an index in [-3, 3) for dim 0 of size 3, got -4");
  CHECK_THROWS_WITH(x.index({Ellipsis, 4}), Catch::Contains("for dim 1 of size 4, got 4"));
  CHECK_THROWS_WITH(x.index({0, 1, 2}),
                    Catch::Contains("expected at most 2 indices (besides None and Ellipsis) for a "
                                    "tensor of shape [3, 4], got 3"));
  CHECK_THROWS_WITH(x.index({Ellipsis, Ellipsis}),
                    Catch::Contains("expected at most one Ellipsis, got 2"));
  CHECK_THROWS_AS(x.index({Slice(None, None, 0)}), ValueError);
  CHECK_THROWS_WITH(x.index({Slice(), Slice(None, None, -1)}),
                    Catch::Contains("expected a slice step > 0 for dim 1, got -1"));
  CHECK_THROWS_WITH(x.index({".."}), Catch::Contains("expected \"...\" (Ellipsis), got \"..\""));
  CHECK_THROWS_WITH(x.index({Slice(), Tensor::from_vector<std::int64_t>({0, 4})}),
                    "Tensor::index: expected indices in [-4, 4) for dim 1 of size 4, got 4");
  CHECK_THROWS_WITH(x.index({Tensor::from_vector<std::int64_t>({-4, 0})}),
                    Catch::Contains("expected indices in [-3, 3) for dim 0 of size 3, got -4"));
  CHECK_THROWS_AS(x.index({Tensor::from_vector<float>({0})}), DTypeError);
  CHECK_THROWS_WITH(x.index({Tensor::zeros({1, 1}, DType::I64)}),
                    Catch::Contains("expected a 1-d index tensor for dim 0, got shape [1, 1]"));
  const Tensor i = Tensor::from_vector<std::int64_t>({0});
  CHECK_THROWS_WITH(x.index({i, i}),
                    Catch::Contains("expected at most one tensor index, got a second one at "
                                    "position 1"));
  CHECK_THROWS_WITH(x.index({Tensor::from_vector<bool>({true, false})}),
                    Catch::Contains("expected a Bool mask of size 3 for dim 0 of size 3, got one "
                                    "of size 2"));
  CHECK_THROWS_WITH(x.index({Tensor()}), Catch::Contains("expected a defined index tensor"));
  CHECK_THROWS_WITH(Tensor().index({0}), Catch::Contains("expected a defined tensor"));
  CHECK_THROWS_WITH(x.index({None, None, None, None, None, None, None}),
                    Catch::Contains("Tensor::index: expected a result with at most 8 dims, got 9"));
  CHECK_THROWS_WITH(TensorIndex(std::uint64_t{1} << 63),
                    Catch::Contains("expected an index below 2^63"));
}

TEST_CASE("index_put_ writes a broadcast value or a scalar into the indexed elements", "[tensor]") {
  Tensor x = Tensor::zeros({3, 4});
  Tensor& same = x.index_put_({Slice(), 1}, f32({1, 2, 3}, {3}));
  CHECK(&same == &x);
  x.index_put_({0, Slice(2, None)}, 7.0);
  x.index_put_({Slice(1, None), Slice(None, None, 3)}, f32({9}, {1}));  // broadcast [1] to [2, 2]
  CHECK_THAT(x, TensorEqual(f32({0, 1, 7, 7, 9, 2, 0, 9, 9, 3, 0, 9}, {3, 4})));
  // A tensor index: rows written in index order (a repeated row: the last write wins).
  Tensor y = Tensor::zeros({3, 2});
  y.index_put_({Tensor::from_vector<std::int64_t>({2, -3, 2})}, f32({1, 1, 2, 2, 3, 3}, {3, 2}));
  CHECK_THAT(y, TensorEqual(f32({2, 2, 0, 0, 3, 3}, {3, 2})));
  y.index_put_({Slice(), Tensor::from_vector<bool>({false, true})}, -1);
  CHECK_THAT(y, TensorEqual(f32({2, -1, 0, -1, 3, -1}, {3, 2})));
  // The value converts to the tensor's dtype; one aliasing the tensor is read first.
  Tensor z = Tensor::arange(0, 5, 1, DType::F64);
  z.index_put_({Slice(1, None)}, z.index({Slice(None, -1)}));
  CHECK(z.to_vector<double>() == std::vector<double>{0, 0, 1, 2, 3});
  z.index_put_({0}, Tensor::scalar(5, DType::I64));
  CHECK(z.to_vector<double>()[0] == 5);
  CHECK_THROWS_WITH(x.index_put_({0}, f32({1, 2}, {2})),
                    Catch::Contains("Tensor::index_put_: shapes [2] and [4] do not broadcast"));
  CHECK_THROWS_WITH(
      x.index_put_({0}, Tensor::zeros({2, 4})),
      Catch::Contains("Tensor::index_put_: expected a value that broadcasts to the indexed shape "
                      "[4], got [2, 4]"));
  CHECK_THROWS_WITH(x.index_put_({0, 4}, 1.0),
                    "Tensor::index_put_: expected an index in [-4, 4) for dim 1 of size 4, got 4");
  CHECK_THROWS_WITH(
      y.index_put_({Tensor::zeros({0}, DType::I64)}, Tensor::zeros({4, 1, 2})),
      Catch::Contains("expected a value that broadcasts to the indexed shape [0, 2]"));
}
