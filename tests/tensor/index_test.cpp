// index_select, gather, scatter_add, index_add, one_hot: PyTorch golden data, I32 indices,
// non-contiguous inputs, every dtype, the in-order scatter, bounds checks and shape errors.
#include <catch2/catch.hpp>

#include "tensor/ops/index.h"
#include "tensor/random/generator.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_tensors.h"

using namespace ruccl;
using ruccl::testing::golden_case;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor i64(const std::vector<std::int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

}  // namespace

TEST_CASE("index ops match PyTorch", "[tensor]") {
  for (const auto& [name, dim] : std::vector<std::pair<const char*, int>>{
           {"index_select_dim0", 0}, {"index_select_dim2", 2}}) {
    INFO(name);
    const auto& c = golden_case(name);
    REQUIRE_THAT(index_select(c.at("x"), dim, c.at("index")), TensorEqual(c.at("out")));
    // I32 indices and a negative dim select the same elements.
    REQUIRE_THAT(index_select(c.at("x"), dim - c.at("x").dim(), c.at("index").to(DType::I32)),
                 TensorEqual(c.at("out")));
  }
  for (const auto& [name, dim] :
       std::vector<std::pair<const char*, int>>{{"gather_dim1", 1}, {"gather_dim0", 0}}) {
    INFO(name);
    const auto& c = golden_case(name);
    REQUIRE_THAT(gather(c.at("x"), dim, c.at("index")), TensorEqual(c.at("out")));
    REQUIRE_THAT(gather(c.at("x"), dim, c.at("index").to(DType::I32)), TensorEqual(c.at("out")));
  }
  for (const auto& [name, dim] :
       std::vector<std::pair<const char*, int>>{{"scatter_add_dim1", 1}, {"scatter_add_dim0", 0}}) {
    INFO(name);
    const auto& c = golden_case(name);
    // Repeated indices add in index order, as torch's CPU kernel does: bit-identical.
    REQUIRE_THAT(scatter_add(c.at("x"), dim, c.at("index"), c.at("src")), TensorEqual(c.at("out")));
  }
  for (const auto& [name, dim] :
       std::vector<std::pair<const char*, int>>{{"index_add_dim0", 0}, {"index_add_dim1", 1}}) {
    INFO(name);
    const auto& c = golden_case(name);
    REQUIRE_THAT(index_add(c.at("x"), dim, c.at("index"), c.at("src")), TensorEqual(c.at("out")));
  }
  const auto& c = golden_case("one_hot");
  REQUIRE_THAT(one_hot(c.at("indices"), 5), TensorEqual(c.at("out")));
  REQUIRE_THAT(one_hot(c.at("indices").to(DType::I32), 5), TensorEqual(c.at("out")));
}

TEST_CASE("index ops read non-contiguous inputs and leave their inputs unchanged", "[tensor]") {
  const Tensor base = Tensor::arange(0, 24, 1, DType::F32).reshape({4, 6});
  const Tensor x = base.transpose(0, 1);  // [6, 4], x[i][j] = 6 j + i
  REQUIRE_THAT(index_select(x, 0, i64({5, 1}, {2})),
               TensorEqual(Tensor::from_vector<float>({5, 11, 17, 23, 1, 7, 13, 19}, {2, 4})));
  REQUIRE_THAT(
      index_select(x, 1, i64({3, 3, 0}, {3}).narrow(0, 1, 2)),
      TensorEqual(Tensor::from_vector<float>({18, 0, 19, 1, 20, 2, 21, 3, 22, 4, 23, 5}, {6, 2})));
  // A strided index (every other element of a longer one).
  const Tensor long_index = i64({1, 9, 0, 9, 3, 9}, {6});
  const Tensor strided_index = long_index.as_strided({3}, {2}, 0);
  REQUIRE_THAT(index_select(base, 1, strided_index),
               TensorEqual(index_select(base, 1, i64({1, 0, 3}, {3}))));
  REQUIRE_THAT(gather(x, 1, i64({0, 3, 2, 2}, {2, 2}).transpose(0, 1)),
               TensorEqual(Tensor::from_vector<float>({0, 12, 19, 13}, {2, 2})));
  const Tensor target = Tensor::zeros({3, 4}).transpose(0, 1);  // [4, 3], non-contiguous
  const Tensor added = index_add(target, 0, i64({3, 0, 3}, {3}), Tensor::ones({3, 3}));
  REQUIRE_THAT(
      added, TensorEqual(Tensor::from_vector<float>({1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 2}, {4, 3})));
  REQUIRE_THAT(target, TensorEqual(Tensor::zeros({4, 3})));
  // A broadcast (stride 0) source.
  const Tensor scattered = scatter_add(Tensor::zeros({2, 3}), 1, i64({2, 2, 0, 1, 1, 1}, {2, 3}),
                                       Tensor::ones({1, 1}).expand({2, 3}));
  REQUIRE_THAT(scattered, TensorEqual(Tensor::from_vector<float>({1, 0, 2, 0, 3, 0}, {2, 3})));
}

TEST_CASE("index ops work for every dtype", "[tensor]") {
  for (DType dtype :
       {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    INFO(dtype);
    const Tensor x = Tensor::from_vector<double>({0, 1, 2, 0, 1, 5}, {3, 2}).to(dtype);
    REQUIRE_THAT(index_select(x, 0, i64({2, 0}, {2})),
                 TensorEqual(Tensor::from_vector<double>({1, 5, 0, 1}, {2, 2}).to(dtype)));
    REQUIRE_THAT(gather(x, 1, i64({1, 1, 0}, {3, 1})),
                 TensorEqual(Tensor::from_vector<double>({1, 0, 1}, {3, 1}).to(dtype)));
    if (dtype == DType::Bool) {
      REQUIRE_THROWS_AS(index_add(x, 0, i64({0}, {1}), x.narrow(0, 0, 1)), DTypeError);
      continue;
    }
    REQUIRE_THAT(index_add(x, 0, i64({2, 2}, {2}), x.narrow(0, 0, 2)),
                 TensorEqual(Tensor::from_vector<double>({0, 1, 2, 0, 3, 6}, {3, 2}).to(dtype)));
    REQUIRE_THAT(scatter_add(x, 0, i64({1, 1}, {1, 2}), x.narrow(0, 2, 1)),
                 TensorEqual(Tensor::from_vector<double>({0, 1, 3, 5, 1, 5}, {3, 2}).to(dtype)));
  }
}

TEST_CASE("scatter_add with repeated indices adds in index order", "[tensor]") {
  // In float32 the sum depends on the order: in index order (1e8 - 1e8) + 1 = 1; in reverse
  // order 1 - 1e8 rounds to -1e8 and the sum is 0.
  const Tensor src = Tensor::from_vector<float>({1e8f, -1e8f, 1.0f}, {3});
  const Tensor out = scatter_add(Tensor::zeros({1}), 0, i64({0, 0, 0}, {3}), src);
  REQUIRE(out.item<float>() == 1.0f);
  REQUIRE(index_add(Tensor::zeros({1}), 0, i64({0, 0, 0}, {3}), src).item<float>() == 1.0f);
  // A permutation scatter on many elements: every value lands where gather finds it again.
  Generator gen(3);
  const Tensor big_src = Tensor::randn({1 << 17}, gen);
  const Tensor big_index = Tensor::randperm(1 << 17, gen);
  const Tensor folded = scatter_add(Tensor::zeros({1 << 17}), 0, big_index, big_src);
  REQUIRE_THAT(gather(folded, 0, big_index), TensorEqual(big_src));
}

TEST_CASE("large index_select and gather give the rows they name", "[tensor]") {
  // Above the parallel threshold: rows of an embedding table.
  const Tensor table = Tensor::arange(0, 1000 * 128, 1, DType::F32).reshape({1000, 128});
  Generator gen(9);
  const Tensor ids = Tensor::randperm(1000, gen);
  const Tensor rows = index_select(table, 0, ids);
  const std::vector<std::int64_t> id = ids.to_vector<std::int64_t>();
  const std::vector<float> r = rows.to_vector<float>();
  bool all = true;
  for (std::size_t i = 0; i < id.size(); ++i) {
    for (std::size_t j = 0; j < 128; ++j) {
      all = all && r[i * 128 + j] == static_cast<float>(id[i] * 128 + static_cast<std::int64_t>(j));
    }
  }
  REQUIRE(all);
  const Tensor col = gather(table, 1, Tensor::full({1000, 1}, 127, DType::I64));
  REQUIRE_THAT(col, TensorEqual(Tensor::arange(127, 128000, 128, DType::F32).reshape({1000, 1})));
}

TEST_CASE("one_hot infers the class count and gives I64", "[tensor]") {
  const Tensor out = one_hot(i64({2, 0}, {2}), -1);
  REQUIRE_THAT(out, TensorEqual(i64({0, 0, 1, 1, 0, 0}, {2, 3})));
  REQUIRE(one_hot(i64({}, {0}), 4).shape() == Shape{0, 4});
  REQUIRE_THAT(one_hot(i64({1}, {}), 2), TensorEqual(i64({0, 1}, {2})));
  REQUIRE_THROWS_MATCHES(
      one_hot(i64({}, {0}), -1), ValueError,
      Catch::Message("one_hot: expected indices to infer num_classes from, got an empty tensor"));
  REQUIRE_THROWS_AS(one_hot(i64({1}, {1}), -2), ValueError);
  REQUIRE_THROWS_AS(one_hot(Tensor::zeros({2}), 3), DTypeError);
}

TEST_CASE("index ops reject out-of-range and negative indices, naming index and position",
          "[tensor]") {
  const Tensor x = Tensor::zeros({5, 3});
  REQUIRE_THROWS_MATCHES(index_select(x, 0, i64({1, 7}, {2})), IndexError,
                         Catch::Message("index_select: expected every index in [0, 5) for dim 0 "
                                        "of shape [5, 3], got 7 at position [1]"));
  REQUIRE_THROWS_MATCHES(index_select(x, 1, i64({-1}, {1}).to(DType::I32)), IndexError,
                         Catch::Message("index_select: expected every index in [0, 3) for dim 1 "
                                        "of shape [5, 3], got -1 at position [0]"));
  REQUIRE_THROWS_MATCHES(gather(x, 1, i64({0, 1, 2, 3}, {2, 2})), IndexError,
                         Catch::Message("gather: expected every index in [0, 3) for dim 1 of "
                                        "shape [5, 3], got 3 at position [1, 1]"));
  REQUIRE_THROWS_MATCHES(
      scatter_add(x, 0, i64({5}, {1, 1}), Tensor::ones({1, 1})), IndexError,
      Catch::Message("scatter_add: expected every index in [0, 5) for dim 0 of shape [5, 3], got "
                     "5 at position [0, 0]"));
  REQUIRE_THROWS_MATCHES(index_add(x, 0, i64({0, -2}, {2}), Tensor::ones({2, 3})), IndexError,
                         Catch::Message("index_add: expected every index in [0, 5) for dim 0 of "
                                        "shape [5, 3], got -2 at position [1]"));
  REQUIRE_THROWS_MATCHES(one_hot(i64({0, 4}, {2}), 4), IndexError,
                         Catch::Message("one_hot: expected every index in [0, 4), got 4 at "
                                        "position [1]"));
  REQUIRE_THROWS_AS(one_hot(i64({-1}, {1}), 4), IndexError);
  REQUIRE_THROWS_AS(index_select(x, 2, i64({0}, {1})), IndexError);  // dim out of range
}

TEST_CASE("index ops reject wrong index dtypes, ranks and shapes", "[tensor]") {
  const Tensor x = Tensor::zeros({4, 3});
  REQUIRE_THROWS_MATCHES(index_select(x, 0, Tensor::zeros({2})), DTypeError,
                         Catch::Message("index_select: expected an I64 or I32 index, got F32"));
  REQUIRE_THROWS_MATCHES(index_select(x, 0, i64({0, 1}, {1, 2})), ShapeError,
                         Catch::Message("index_select: expected a 1-d index, got shape [1, 2]"));
  REQUIRE_THROWS_MATCHES(gather(x, 0, i64({0}, {1})), ShapeError,
                         Catch::Message("gather: expected an index with 2 dims like the input "
                                        "[4, 3], got shape [1]"));
  REQUIRE_THROWS_AS(gather(x, 0, i64({0, 0, 0, 0}, {1, 4})), ShapeError);  // 4 > 3 on dim 1
  REQUIRE_THROWS_AS(scatter_add(x, 0, i64({0, 0}, {1, 2}), Tensor::ones({1, 1})), ShapeError);
  REQUIRE_THROWS_AS(scatter_add(x, 0, i64({0}, {1, 1}), Tensor::ones({1, 1}, DType::F64)),
                    DTypeError);
  REQUIRE_THROWS_MATCHES(index_add(x, 0, i64({0, 1}, {2}), Tensor::ones({3, 3})), ShapeError,
                         Catch::Message("index_add: expected src of shape [2, 3] (the input's "
                                        "with dim 0 the index length), got [3, 3]"));
  REQUIRE_THROWS_AS(index_select(Tensor::scalar(1.0), 0, i64({0}, {1})), ShapeError);
  REQUIRE_THROWS_AS(index_select(Tensor(), 0, i64({0}, {1})), ValueError);
}
