// Tensor's op methods (x.sum(1), x.relu(), x.matmul(w), ...) give exactly the free functions'
// results: same values, dtype and shape, same errors.
#include <catch2/catch.hpp>

#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

namespace {

Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

}  // namespace

TEST_CASE("reduction methods equal the free reductions", "[tensor]") {
  Generator gen(11);
  const Tensor x = Tensor::randn({2, 3, 4}, gen, DType::F64);
  CHECK_THAT(x.sum(), TensorEqual(sum(x)));
  CHECK_THAT(x.sum(1), TensorEqual(sum(x, 1)));
  CHECK_THAT(x.sum(-1, true), TensorEqual(sum(x, -1, true)));
  CHECK_THAT(x.sum({0, 2}), TensorEqual(sum(x, {0, 2})));
  CHECK_THAT(x.sum({0, 2}, true), TensorEqual(sum(x, {0, 2}, true)));
  CHECK_THAT(x.mean(), TensorEqual(mean(x)));
  CHECK_THAT(x.mean(2), TensorEqual(mean(x, 2)));
  CHECK_THAT(x.mean(0, true), TensorEqual(mean(x, 0, true)));
  CHECK_THAT(x.mean({1, 2}), TensorEqual(mean(x, {1, 2})));
  CHECK_THAT(x.prod(), TensorEqual(prod(x)));
  CHECK_THAT(x.prod(1, true), TensorEqual(prod(x, 1, true)));
  CHECK_THAT(x.max(), TensorEqual(max(x)));
  CHECK_THAT(x.max(1), TensorEqual(max(x, 1)));
  CHECK_THAT(x.min(-1, true), TensorEqual(min(x, -1, true)));
  CHECK_THAT(x.min(), TensorEqual(min(x)));
  CHECK_THAT(x.argmax(), TensorEqual(argmax(x)));
  CHECK_THAT(x.argmax(2), TensorEqual(argmax(x, 2)));
  CHECK_THAT(x.argmin(0, true), TensorEqual(argmin(x, 0, true)));
  CHECK_THAT(x.argmin(), TensorEqual(argmin(x)));
  CHECK_THAT(x.var(1), TensorEqual(var(x, 1)));
  CHECK_THAT(x.var({0, 1}, 0, true), TensorEqual(var(x, {0, 1}, 0, true)));
  CHECK_THAT(x.softmax(1), TensorEqual(softmax(x, 1)));
  CHECK_THAT(x.log_softmax(-1), TensorEqual(log_softmax(x, -1)));
  // The integer rules come along: an I32 sum is I64, an integer mean a DTypeError.
  const Tensor i = Tensor::arange(0, 6, 1, DType::I32).reshape({2, 3});
  CHECK(i.sum().dtype() == DType::I64);
  CHECK(i.sum(1).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 12});
  CHECK_THROWS_AS(i.mean(), DTypeError);
  CHECK_THROWS_WITH(x.sum(3), Catch::Contains("dim"));
}

TEST_CASE("elementwise methods equal the free functions", "[tensor]") {
  Generator gen(12);
  const Tensor x = Tensor::randn({3, 4}, gen, DType::F32);
  const Tensor y = add(Tensor::rand({4}, gen, DType::F32), 0.5);  // positive, broadcasts
  CHECK_THAT(x.neg(), TensorEqual(neg(x)));
  CHECK_THAT(x.exp(), TensorEqual(exp(x)));
  CHECK_THAT(y.log(), TensorEqual(log(y)));
  CHECK_THAT(y.sqrt(), TensorEqual(sqrt(y)));
  CHECK_THAT(x.abs(), TensorEqual(abs(x)));
  CHECK_THAT(x.sign(), TensorEqual(sign(x)));
  CHECK_THAT(x.tanh(), TensorEqual(tanh(x)));
  CHECK_THAT(x.sigmoid(), TensorEqual(sigmoid(x)));
  CHECK_THAT(x.relu(), TensorEqual(relu(x)));
  CHECK_THAT(x.gelu(), TensorEqual(gelu(x)));
  CHECK_THAT(x.add(y), TensorEqual(x + y));
  CHECK_THAT(x.add(2), TensorEqual(x + 2));
  CHECK_THAT(x.sub(y), TensorEqual(x - y));
  CHECK_THAT(x.sub(0.5), TensorEqual(x - 0.5));
  CHECK_THAT(x.mul(y), TensorEqual(x * y));
  CHECK_THAT(x.mul(3.0), TensorEqual(x * 3.0));
  CHECK_THAT(x.div(y), TensorEqual(x / y));
  CHECK_THAT(x.div(4), TensorEqual(x / 4));
  CHECK_THAT(y.pow(x), TensorEqual(pow(y, x)));
  CHECK_THAT(y.pow(2.5), TensorEqual(pow(y, 2.5)));
  CHECK_THAT(x.maximum(y), TensorEqual(maximum(x, y)));
  CHECK_THAT(x.minimum(y), TensorEqual(minimum(x, y)));
  CHECK_THAT(x.eq(y), TensorEqual(eq(x, y)));
  CHECK_THAT(x.eq(0), TensorEqual(eq(x, 0)));
  CHECK_THAT(x.ne(y), TensorEqual(ne(x, y)));
  CHECK_THAT(x.ne(0), TensorEqual(ne(x, 0)));
  CHECK_THAT(x.lt(y), TensorEqual(lt(x, y)));
  CHECK_THAT(x.lt(0), TensorEqual(lt(x, 0)));
  CHECK_THAT(x.le(y), TensorEqual(le(x, y)));
  CHECK_THAT(x.le(0), TensorEqual(le(x, 0)));
  CHECK_THAT(x.gt(y), TensorEqual(gt(x, y)));
  CHECK_THAT(x.gt(0.5), TensorEqual(gt(x, 0.5)));
  CHECK_THAT(x.ge(y), TensorEqual(ge(x, y)));
  CHECK_THAT(x.ge(0), TensorEqual(ge(x, 0)));
  // Chains read left to right, as in libtorch.
  CHECK_THAT(x.relu().sum(1).mean(), TensorEqual(mean(sum(relu(x), 1))));
  CHECK_THROWS_AS(Tensor::arange(0, 3).exp(), DTypeError);  // I64: the free function's error
}

TEST_CASE("matmul t index and split methods equal the free functions", "[tensor]") {
  Generator gen(13);
  const Tensor a = Tensor::randn({3, 4}, gen, DType::F64);
  const Tensor w = Tensor::randn({4, 2}, gen, DType::F64);
  CHECK_THAT(a.matmul(w), TensorEqual(matmul(a, w)));
  CHECK_THAT(a.t(), TensorEqual(a.transpose(0, 1)));
  CHECK(a.t().storage() == a.storage());  // a view, as transpose
  const Tensor v = f64({1, 2, 3}, {3});
  CHECK(v.t().shape() == Shape{3});  // 0-d and 1-d as they are (torch's t())
  CHECK(Tensor::scalar(2.0).t().shape() == Shape{});
  CHECK_THROWS_WITH(
      Tensor::zeros({2, 3, 4}).t(),
      Catch::Contains("Tensor::t: expected a tensor with at most 2 dims, got [2, 3, 4]"));
  const Tensor idx = Tensor::from_vector<std::int64_t>({2, 0});
  CHECK_THAT(a.index_select(0, idx), TensorEqual(index_select(a, 0, idx)));
  const Tensor g_idx = Tensor::from_vector<std::int64_t>({0, 3, 1, 1, 2, 0}, {3, 2});
  CHECK_THAT(a.gather(1, g_idx), TensorEqual(gather(a, 1, g_idx)));
  const auto pieces = a.split(2, 1);
  REQUIRE(pieces.size() == 2);
  CHECK_THAT(pieces[1], TensorEqual(a.narrow(1, 2, 2)));
  const auto sized = a.split({1, 2}, 0);
  REQUIRE(sized.size() == 2);
  CHECK_THAT(sized[1], TensorEqual(a.narrow(0, 1, 2)));
  const auto chunks = a.chunk(3, 0);
  REQUIRE(chunks.size() == 3);
  CHECK_THAT(chunks[2], TensorEqual(a.narrow(0, 2, 1)));
}
