// cat, stack, split, chunk: values, views, dtype promotion, torch's edge cases and errors.
#include <catch2/catch.hpp>

#include "tensor/ops/shape_ops.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

namespace {

Tensor f32(const std::vector<float>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

std::vector<Shape> shapes(const std::vector<Tensor>& pieces) {
  std::vector<Shape> out;
  for (const Tensor& p : pieces) out.push_back(p.shape());
  return out;
}

}  // namespace

TEST_CASE("cat joins along any dim, including negative dims and non-contiguous inputs",
          "[tensor]") {
  const Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = f32({7, 8}, {2, 1});
  REQUIRE_THAT(cat({a, b}, 1), TensorEqual(f32({1, 2, 3, 7, 4, 5, 6, 8}, {2, 4})));
  REQUIRE_THAT(cat({a, b}, -1), TensorEqual(f32({1, 2, 3, 7, 4, 5, 6, 8}, {2, 4})));
  REQUIRE_THAT(cat({a, a.narrow(0, 1, 1)}, 0),
               TensorEqual(f32({1, 2, 3, 4, 5, 6, 4, 5, 6}, {3, 3})));
  // A transposed input and a broadcast (stride 0) input.
  REQUIRE_THAT(cat({a.transpose(0, 1), Tensor::ones({1, 1}).expand({3, 2})}, 1),
               TensorEqual(f32({1, 4, 1, 1, 2, 5, 1, 1, 3, 6, 1, 1}, {3, 4})));
  // Zero-size pieces along the dim contribute nothing.
  REQUIRE_THAT(cat({Tensor::zeros({2, 0}), a, Tensor::zeros({2, 0})}, 1), TensorEqual(a));
  // torch's legacy rule: 1-d empty tensors are skipped whatever their rank.
  REQUIRE_THAT(cat({a, Tensor::zeros({0})}, 0), TensorEqual(a));
  REQUIRE(cat({Tensor::zeros({0}), Tensor::zeros({0})}).shape() == Shape{0});
  // The output is a fresh tensor.
  Tensor joined = cat({a}, 0);
  joined.fill_(0);
  REQUIRE_THAT(a, TensorEqual(f32({1, 2, 3, 4, 5, 6}, {2, 3})));
}

TEST_CASE("cat promotes dtypes like the elementwise ops", "[tensor]") {
  const Tensor ints = Tensor::from_vector<std::int32_t>({1, 2}, {2});
  const Tensor longs = Tensor::from_vector<std::int64_t>({3}, {1});
  REQUIRE_THAT(cat({ints, longs}), TensorEqual(Tensor::from_vector<std::int64_t>({1, 2, 3}, {3})));
  const Tensor halves = Tensor::from_vector<float>({0.5f}, {1}).to(DType::F16);
  REQUIRE_THAT(cat({ints, halves}), TensorEqual(f32({1, 2, 0.5f}, {3}).to(DType::F16)));
  REQUIRE(cat({halves, halves.to(DType::BF16)}).dtype() == DType::F32);
  const Tensor flags = Tensor::from_vector<bool>({true, false}, {2});
  REQUIRE_THAT(cat({flags, flags}),
               TensorEqual(Tensor::from_vector<bool>({true, false, true, false}, {4})));
}

TEST_CASE("stack joins equal shapes along a new dim", "[tensor]") {
  const Tensor a = f32({1, 2, 3}, {3});
  const Tensor b = f32({4, 5, 6}, {3});
  REQUIRE_THAT(stack({a, b}), TensorEqual(f32({1, 2, 3, 4, 5, 6}, {2, 3})));
  REQUIRE_THAT(stack({a, b}, 1), TensorEqual(f32({1, 4, 2, 5, 3, 6}, {3, 2})));
  REQUIRE_THAT(stack({a, b}, -1), TensorEqual(f32({1, 4, 2, 5, 3, 6}, {3, 2})));
  REQUIRE_THAT(stack({Tensor::scalar(1.0), Tensor::scalar(2.0)}), TensorEqual(f32({1, 2}, {2})));
  REQUIRE_THROWS_MATCHES(stack({a, f32({1, 2}, {2})}), ShapeError,
                         Catch::Message("stack: expected every tensor to have shape [3] (like "
                                        "tensor 0), got tensor 1 with shape [2]"));
  REQUIRE_THROWS_AS(stack({a, b}, 2), IndexError);
  REQUIRE_THROWS_AS(stack({}), ValueError);
}

TEST_CASE("split and chunk return views that share the input's storage", "[tensor]") {
  const Tensor x = Tensor::arange(0, 10, 1, DType::F32).reshape({5, 2});
  std::vector<Tensor> pieces = split(x, 2);
  REQUIRE(shapes(pieces) == std::vector<Shape>{{2, 2}, {2, 2}, {1, 2}});
  REQUIRE_THAT(pieces[2], TensorEqual(f32({8, 9}, {1, 2})));
  REQUIRE(pieces[1].storage() == x.storage());
  pieces[1].fill_(-1);
  REQUIRE_THAT(x.select(0, 2), TensorEqual(f32({-1, -1}, {2})));

  const std::vector<Tensor> columns = split(x, 1, 1);
  REQUIRE(shapes(columns) == std::vector<Shape>{{5, 1}, {5, 1}});
  REQUIRE(shapes(split(x, {1, 0, 4})) == std::vector<Shape>{{1, 2}, {0, 2}, {4, 2}});
  REQUIRE_THAT(split(x, {1, 4})[1].select(0, 3), TensorEqual(f32({8, 9}, {2})));
  REQUIRE(shapes(split(x, 7)) == std::vector<Shape>{{5, 2}});
  // An empty dim gives one empty piece, as torch.split.
  REQUIRE(shapes(split(Tensor::zeros({0, 3}), 2)) == std::vector<Shape>{{0, 3}});
  REQUIRE(shapes(split(Tensor::zeros({0, 3}), 0)) == std::vector<Shape>{{0, 3}});
}

TEST_CASE("chunk sizes follow torch.chunk", "[tensor]") {
  const Tensor five = Tensor::arange(0, 5);
  REQUIRE(shapes(chunk(five, 3)) == std::vector<Shape>{{2}, {2}, {1}});
  // torch may return fewer chunks than asked: 6 elements in 4 chunks of 2.
  REQUIRE(shapes(chunk(Tensor::arange(0, 6), 4)) == std::vector<Shape>{{2}, {2}, {2}});
  REQUIRE(shapes(chunk(five, 8)).size() == 5);
  REQUIRE_THAT(chunk(five, 2)[1], TensorEqual(Tensor::arange(3, 5)));
  REQUIRE(shapes(chunk(Tensor::zeros({2, 6}), 3, -1)) ==
          std::vector<Shape>{{2, 2}, {2, 2}, {2, 2}});
  // An empty dim gives `chunks` empty pieces, as torch.chunk.
  REQUIRE(shapes(chunk(Tensor::zeros({0}), 3)) == std::vector<Shape>{{0}, {0}, {0}});
}

TEST_CASE("cat, split and chunk name the op and the mismatch in their errors", "[tensor]") {
  const Tensor a = Tensor::zeros({2, 3});
  REQUIRE_THROWS_MATCHES(cat({a, Tensor::zeros({2, 4})}, 0), ShapeError,
                         Catch::Message("cat: expected tensor 1 to have size 3 at dim 1 (like "
                                        "tensor 0; only dim 0 may differ), got shape [2, 4] and "
                                        "[2, 3]"));
  REQUIRE_THROWS_MATCHES(cat({a, Tensor::zeros({2, 3, 1})}, 0), ShapeError,
                         Catch::Message("cat: expected tensor 1 to have 2 dims (like tensor 0), "
                                        "got shape [2, 3, 1]"));
  REQUIRE_THROWS_MATCHES(cat({}, 0), ValueError,
                         Catch::Message("cat: expected a non-empty list of tensors, got none"));
  REQUIRE_THROWS_AS(cat({a, a}, 2), IndexError);
  REQUIRE_THROWS_AS(cat({Tensor::scalar(1.0)}), ShapeError);
  REQUIRE_THROWS_AS(cat({a, Tensor()}), ValueError);
  REQUIRE_THROWS_MATCHES(split(a, 0), ValueError,
                         Catch::Message("split: expected a split_size > 0 (or 0 for an empty "
                                        "dim), got 0 for dim 0 of size 2"));
  REQUIRE_THROWS_MATCHES(split(a, {1, 1}, 1), ShapeError,
                         Catch::Message("split: expected sizes that sum to 3 (dim 1 of shape "
                                        "[2, 3]), got [1, 1] summing to 2"));
  REQUIRE_THROWS_AS(split(a, {3, -1}, 1), ShapeError);
  REQUIRE_THROWS_MATCHES(chunk(a, 0), ValueError,
                         Catch::Message("chunk: expected chunks > 0, got 0"));
  REQUIRE_THROWS_AS(chunk(a, 2, 5), IndexError);
}
