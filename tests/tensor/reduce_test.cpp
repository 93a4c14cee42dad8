// Reductions and softmax: values in closed form, dims and keepdim, strided layouts (inner and
// outer reductions), dtypes, empty dims, NaN, accuracy of long sums, thread-count determinism and
// every error path. (Random inputs against PyTorch: golden_ops_test.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor f32(std::vector<float> v, Shape shape) { return Tensor::from_vector<float>(v, shape); }
Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(v); }
Tensor i64(std::vector<std::int64_t> v, Shape shape) {
  return Tensor::from_vector<std::int64_t>(v, shape);
}
Tensor i64(std::vector<std::int64_t> v) { return Tensor::from_vector<std::int64_t>(v); }

// 0, 1, ..., numel - 1 as `dtype` in `shape`.
Tensor iota(Shape shape, DType dtype = DType::F32) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_vector<double>(v, shape).to(dtype);
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("sum, mean, prod, max and min reduce the requested dims", "[tensor]") {
  const Tensor x = iota({2, 3, 4});  // x[i][j][k] = 12 i + 4 j + k
  CHECK_THAT(sum(x), TensorEqual(Tensor::scalar(276.0f)));
  CHECK_THAT(sum(x, 0), TensorEqual(iota({3, 4}) * 2 + 12));
  CHECK_THAT(sum(x, -1), TensorEqual(f32({6, 22, 38, 54, 70, 86}, {2, 3})));
  CHECK_THAT(sum(x, {0, 2}), TensorEqual(f32({60, 92, 124})));
  CHECK_THAT(sum(x, {2, 0}, true), TensorEqual(f32({60, 92, 124}, {1, 3, 1})));
  CHECK_THAT(sum(x, std::vector<std::int64_t>{}), TensorEqual(Tensor::scalar(276.0f)));
  CHECK_THAT(mean(x, 1), TensorEqual(f32({4, 5, 6, 7, 16, 17, 18, 19}, {2, 4})));
  CHECK_THAT(mean(x), TensorEqual(Tensor::scalar(11.5f)));
  CHECK_THAT(mean(x, {0, 1}, true), TensorEqual(f32({10, 11, 12, 13}, {1, 1, 4})));
  CHECK_THAT(prod(x + 1, 2), TensorEqual(f32({24, 1680, 11880, 43680, 116280, 255024}, {2, 3})));
  CHECK_THAT(prod(f32({2, 3, 4})), TensorEqual(Tensor::scalar(24.0f)));
  CHECK_THAT(max(x, 1), TensorEqual(f32({8, 9, 10, 11, 20, 21, 22, 23}, {2, 4})));
  CHECK_THAT(min(x, 0, true), TensorEqual(iota({1, 3, 4})));
  CHECK_THAT(max(x), TensorEqual(Tensor::scalar(23.0f)));
  CHECK_THAT(min(-x), TensorEqual(Tensor::scalar(-23.0f)));
  // A 0-d tensor reduces over nothing; dim 0 and -1 name it.
  const Tensor s = Tensor::scalar(3.0f);
  CHECK_THAT(sum(s), TensorEqual(s));
  CHECK_THAT(sum(s, 0), TensorEqual(s));
  CHECK_THAT(max(s, -1), TensorEqual(s));
  CHECK_THAT(mean(s, 0, true), TensorEqual(s));
}

TEST_CASE("argmax and argmin give the first index of the extreme as I64", "[tensor]") {
  const Tensor x = f32({3, 7, 7, 1, 2, 1, 9, 0, 5}, {3, 3});
  CHECK_THAT(argmax(x, 1), TensorEqual(i64({1, 1, 0})));
  CHECK_THAT(argmin(x, 1), TensorEqual(i64({0, 0, 1})));
  CHECK_THAT(argmax(x, 0, true), TensorEqual(i64({2, 0, 0}, {1, 3})));
  CHECK_THAT(argmin(x, -2), TensorEqual(i64({1, 2, 1})));
  CHECK_THAT(argmax(x), TensorEqual(Tensor::scalar(6, DType::I64)));
  CHECK_THAT(argmin(x), TensorEqual(Tensor::scalar(7, DType::I64)));
  CHECK_THAT(argmax(x.transpose(0, 1), 1), TensorEqual(i64({2, 0, 0})));
  CHECK_THAT(argmax(f32({1, kNan, 3, kNan}), 0), TensorEqual(Tensor::scalar(1, DType::I64)));
  CHECK_THAT(argmin(Tensor::from_vector<std::int32_t>({4, -2, -2}), 0),
             TensorEqual(Tensor::scalar(1, DType::I64)));
  CHECK_THAT(argmax(Tensor::scalar(2.0f), 0), TensorEqual(Tensor::scalar(0, DType::I64)));
  CHECK_THAT(argmin(Tensor::scalar(2.0f)), TensorEqual(Tensor::scalar(0, DType::I64)));
}

TEST_CASE("reductions read transposed, narrowed and expanded layouts", "[tensor]") {
  const Tensor m = iota({6, 5});
  const Tensor t = m.transpose(0, 1);  // [5, 6]: the reduced inner dim is strided in memory
  for (std::int64_t dim : {0, 1}) {
    INFO("dim " << dim);
    CHECK_THAT(sum(t, dim), TensorEqual(sum(t.contiguous(), dim)));
    CHECK_THAT(max(t, dim), TensorEqual(max(t.contiguous(), dim)));
    CHECK_THAT(argmin(t, dim), TensorEqual(argmin(t.contiguous(), dim)));
    CHECK_THAT(softmax(t, dim), TensorEqual(softmax(t.contiguous(), dim)));
    CHECK_THAT(mean(m.narrow(1, 1, 3), dim),
               TensorEqual(mean(m.narrow(1, 1, 3).contiguous(), dim)));
  }
  const Tensor e = f32({1, 2, 3}, {3, 1}).expand({3, 4});  // stride 0 along dim 1
  CHECK_THAT(sum(e, 1), TensorEqual(f32({4, 8, 12})));
  CHECK_THAT(sum(e, 0), TensorEqual(f32({6, 6, 6, 6})));
  const Tensor p = iota({2, 3, 4}).permute({2, 0, 1});
  CHECK_THAT(sum(p, {0, 2}), TensorEqual(sum(p.contiguous(), {0, 2})));
  CHECK_THAT(var(p, {1}, 1), TensorNear(var(p.contiguous(), {1}, 1)));
}

TEST_CASE("sums and products of integers and Bool give I64; extremes keep the dtype", "[tensor]") {
  const Tensor i = Tensor::from_vector<std::int32_t>({2000000000, 2000000000, 3}, {3});
  CHECK_THAT(sum(i), TensorEqual(Tensor::scalar(std::int64_t{4000000003}, DType::I64)));
  CHECK_THAT(prod(Tensor::from_vector<std::int32_t>({100000, 100000}), 0),
             TensorEqual(Tensor::scalar(std::int64_t{10000000000}, DType::I64)));
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  CHECK_THAT(sum(i64({big, 2})), TensorEqual(Tensor::scalar(big + 2, DType::I64)));
  CHECK_THAT(max(i64({big, big - 1})), TensorEqual(Tensor::scalar(big, DType::I64)));
  const Tensor b = Tensor::from_vector<bool>({true, false, true, true}, {2, 2});
  CHECK_THAT(sum(b, 0), TensorEqual(i64({2, 1})));
  CHECK_THAT(max(b, 1), TensorEqual(Tensor::from_vector<bool>({true, true})));
  CHECK_THAT(min(b, 1), TensorEqual(Tensor::from_vector<bool>({false, true})));
  for (DType dtype : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    INFO("dtype " << dtype);
    const Tensor x = iota({4, 8}, dtype);
    CHECK_THAT(sum(x, 1), TensorEqual(f32({28, 92, 156, 220}).to(dtype)));
    CHECK_THAT(mean(x, 0), TensorEqual(iota({8}, dtype) + 12));
    CHECK_THAT(max(x, 0), TensorEqual(iota({8}, dtype) + 24));
    CHECK_THAT(min(x, 1, true), TensorEqual(f32({0, 8, 16, 24}, {4, 1}).to(dtype)));
    CHECK_THAT(argmax(x, 1), TensorEqual(i64({7, 7, 7, 7})));
  }
  for (DType dtype : {DType::I32, DType::I64}) {
    const Tensor x = iota({4, 8}, dtype);
    CHECK_THAT(sum(x, 1), TensorEqual(i64({28, 92, 156, 220})));
    CHECK_THAT(max(x, 0), TensorEqual(iota({8}, dtype) + 24));
    CHECK_THAT(argmin(x, 0), TensorEqual(i64({0, 0, 0, 0, 0, 0, 0, 0})));
  }
}

TEST_CASE("F16 sums accumulate in wider precision and round once", "[tensor]") {
  // 4096 ones: an F16 running sum would stop at 2048 (2048 + 1 rounds back to 2048).
  const Tensor ones = Tensor::ones({4096}, DType::F16);
  CHECK_THAT(sum(ones), TensorEqual(Tensor::scalar(4096, DType::F16)));
  CHECK_THAT(mean(ones), TensorEqual(Tensor::scalar(1, DType::F16)));
  CHECK_THAT(sum(Tensor::ones({4096, 2}, DType::BF16), 0),
             TensorEqual(Tensor::full({2}, 4096, DType::BF16)));
}

TEST_CASE("a sum of 16M floats is accurate and the same on one and two threads", "[tensor]") {
  const int saved = cpu::num_threads();
  const std::int64_t n = std::int64_t{1} << 24;
  const Tensor x = Tensor::full({n}, 0.1, DType::F32);  // 0.1f = 0.100000001490116...
  const double exact = static_cast<double>(0.1f) * static_cast<double>(n);
  cpu::set_num_threads(1);
  const Tensor one = sum(x);
  cpu::set_num_threads(2);
  const Tensor two = sum(x);
  cpu::set_num_threads(saved);
  // A float running sum would be off by percents (it stalls where 0.1 is below half an ulp).
  CHECK(std::fabs(one.item<float>() - exact) <= 1e-7 * exact);
  CHECK_THAT(two, TensorEqual(one));  // bit-identical
}

TEST_CASE("large reductions of every layout are exact and agree across thread counts", "[tensor]") {
  // Values i % 7: every sum below is an integer under 2^24, so exact in F32 whatever the order.
  auto make = [](Shape shape) {
    std::vector<float> v(static_cast<std::size_t>(shape.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7);
    return Tensor::from_vector<float>(v, shape);
  };
  const Tensor cube = make({64, 40, 50});  // splits kept dims across threads
  const Tensor tall = make({200000, 3});   // only tiny kept dims: fixed blocks of rows
  const Tensor flat = make({1 << 17});
  // Random (non-integer) values, so that any change of summation order would show: reducing outer
  // rows into a contiguous row (whole-row blocks), and a row too wide for partials (kept split).
  Generator gen(11);
  const Tensor rows = Tensor::rand({3000, 100}, gen);
  const Tensor wide = Tensor::rand({40, 5000}, gen);
  const int saved = cpu::num_threads();
  std::vector<Tensor> results[2];
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    auto& r = results[threads - 1];
    r.push_back(sum(cube, {0, 1}));
    r.push_back(sum(cube, 2));
    r.push_back(sum(cube.transpose(0, 2), {1, 2}));
    r.push_back(max(cube, 1));
    r.push_back(sum(tall, 0));
    r.push_back(mean(tall, 0));
    r.push_back(min(tall.transpose(0, 1), 1));
    r.push_back(sum(flat));
    r.push_back(argmax(tall, 0));
    r.push_back(softmax(cube, 1));
    r.push_back(log_softmax(tall, 1));
    r.push_back(cube * 2 + cube.narrow(2, 0, 1));
    r.push_back(sum(rows, 0));
    r.push_back(mean(rows, 0, true));
    r.push_back(sum(wide, 0));
  }
  cpu::set_num_threads(saved);
  for (std::size_t k = 0; k < results[0].size(); ++k) {
    INFO("result " << k);
    CHECK_THAT(results[1][k], TensorEqual(results[0][k]));
  }
  // Exact values: column c of `tall` holds (3 i + c) % 7 over rows i.
  std::vector<float> columns(3, 0.0f);
  for (std::int64_t i = 0; i < 200000; ++i) {
    for (int c = 0; c < 3; ++c)
      columns[static_cast<std::size_t>(c)] += static_cast<float>((3 * i + c) % 7);
  }
  CHECK_THAT(results[0][4], TensorEqual(f32(columns)));
  CHECK_THAT(results[0][6], TensorEqual(f32({0, 0, 0})));
  CHECK_THAT(results[0][8], TensorEqual(i64({2, 4, 6})));  // first rows holding 6 in each column
  double total = 0;
  for (std::int64_t i = 0; i < (1 << 17); ++i) total += static_cast<double>(i % 7);
  CHECK(results[0][7].item<float>() == static_cast<float>(total));
  CHECK_THAT(results[0][2], TensorEqual(sum(cube, {0, 1})));
}

TEST_CASE("empty reductions: sum is 0, prod 1, mean NaN; max and argmax are errors", "[tensor]") {
  const Tensor e = Tensor::zeros({3, 0});
  CHECK_THAT(sum(e, 1), TensorEqual(Tensor::zeros({3})));
  CHECK_THAT(sum(e), TensorEqual(Tensor::scalar(0.0f)));
  CHECK_THAT(prod(e, 1), TensorEqual(Tensor::ones({3})));
  CHECK_THAT(mean(e, 1), TensorEqual(Tensor::full({3}, kNan)));
  CHECK_THAT(sum(Tensor::zeros({0}, DType::I32)), TensorEqual(Tensor::scalar(0, DType::I64)));
  CHECK(max(e, 0).shape() == Shape{0});  // reducing a non-empty dim of an empty tensor is fine
  CHECK_THROWS_WITH(max(e, 1), Catch::Contains("max: expected a non-empty dim to reduce, got "
                                               "dim 1 of size 0 in shape [3, 0]"));
  CHECK_THROWS_AS(min(e), IndexError);
  CHECK_THROWS_AS(max(Tensor::zeros({0})), IndexError);
  CHECK_THROWS_AS(argmax(e, 1), IndexError);
  CHECK_THROWS_AS(argmin(Tensor::zeros({0})), IndexError);
  CHECK(softmax(e, 1).shape() == Shape{3, 0});
}

TEST_CASE("max and min propagate NaN", "[tensor]") {
  const Tensor x = f32({1, kNan, 3, 4, 5, 6}, {2, 3});
  CHECK_THAT(max(x, 1), TensorEqual(f32({kNan, 6})));
  CHECK_THAT(min(x, 0), TensorEqual(f32({1, kNan, 3})));
  CHECK_THAT(max(x), TensorEqual(Tensor::scalar(kNan)));
  CHECK_THAT(sum(x, 0), TensorEqual(f32({5, kNan, 9})));
}

TEST_CASE("var divides by N - correction", "[tensor]") {
  const Tensor x = f32({1, 2, 3, 4, 6, 8, 10, 12}, {2, 4});
  CHECK_THAT(var(x, {1}, 0), TensorEqual(f32({1.25f, 5})));
  CHECK_THAT(var(x, {1}), TensorNear(f32({5.0f / 3, 20.0f / 3}), 1e-6, 0));
  CHECK_THAT(var(x, {0}, 1, true), TensorEqual(f32({12.5f, 18, 24.5f, 32}, {1, 4})));
  CHECK_THAT(var(x, 1, 0, true), TensorEqual(f32({1.25f, 5}, {2, 1})));
  // mean 5.75, squared deviations sum to 109.5
  CHECK_THAT(var(x, std::vector<std::int64_t>{}, 0), TensorEqual(Tensor::scalar(13.6875f)));
  CHECK_THAT(var(x.to(DType::F16), {1}, 0), TensorEqual(f32({1.25f, 5}).to(DType::F16)));
  CHECK_THAT(var(f32({3}), {0}), TensorEqual(Tensor::scalar(kNan)));  // 0 / 0, as PyTorch
  CHECK_THROWS_AS(var(x, {1}, -1), ValueError);
}

TEST_CASE("softmax and log_softmax are numerically stable along any dim", "[tensor]") {
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 1000, 1001, 1002}, {2, 3});
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  const Tensor row = Tensor::from_vector<double>({1 / z, std::exp(1.0) / z, std::exp(2.0) / z});
  const Tensor expected = Tensor::from_vector<double>({1, 2}, {2, 1}) * 0 + row.reshape({1, 3});
  CHECK_THAT(softmax(x, 1), TensorNear(expected, 1e-14, 0));
  CHECK_THAT(softmax(x, -1), TensorNear(expected, 1e-14, 0));
  CHECK_THAT(log_softmax(x, 1), TensorNear(log(expected), 1e-14, 1e-14));
  CHECK_THAT(sum(softmax(x.to(DType::F32), 0), 0), TensorNear(Tensor::ones({3}), 1e-6, 0));
  CHECK_THAT(softmax(x, 0),
             TensorNear(Tensor::from_vector<double>({0, 0, 0, 1, 1, 1}, {2, 3}), 0, 1e-300));
  // Softmax over an outer dim of a 3-d tensor equals the one over the last dim of its transpose.
  const Tensor y = iota({3, 4, 5}) * 0.25;
  CHECK_THAT(softmax(y, 1), TensorNear(softmax(y.transpose(1, 2), 2).transpose(1, 2), 1e-6, 0));
  CHECK_THAT(log_softmax(y, 0),
             TensorNear(log_softmax(y.permute({1, 2, 0}), 2).permute({2, 0, 1}), 1e-6, 1e-6));
  CHECK_THAT(softmax(Tensor::scalar(5.0f), 0), TensorEqual(Tensor::scalar(1.0f)));
  CHECK_THAT(softmax(f32({kNan, 1}), 0), TensorEqual(f32({kNan, kNan})));
  CHECK_THAT(softmax(Tensor::zeros({2, 4}, DType::BF16), 1),
             TensorEqual(Tensor::full({2, 4}, 0.25, DType::BF16)));
}

TEST_CASE("reductions reject bad dims and dtypes with clear errors", "[tensor]") {
  const Tensor x = Tensor::zeros({2, 3});
  using Catch::Contains;
  CHECK_THROWS_AS(sum(x, 2), IndexError);
  CHECK_THROWS_AS(sum(x, -3), IndexError);
  CHECK_THROWS_WITH(sum(x, {1, -1}),
                    Contains("sum: expected each dim at most once, got dim 1 twice"));
  CHECK_THROWS_AS(mean(x, {0, 0}), IndexError);
  CHECK_THROWS_AS(max(x, 5), IndexError);
  CHECK_THROWS_AS(argmax(x, 2), IndexError);
  CHECK_THROWS_AS(softmax(x, 2), IndexError);
  CHECK_THROWS_AS(sum(Tensor::scalar(1.0f), 1), IndexError);
  const Tensor i = Tensor::zeros({2}, DType::I32);
  CHECK_THROWS_WITH(mean(i), Contains("mean: expected a floating dtype") && Contains("got I32") &&
                                 Contains("to(DType::F32)"));
  CHECK_THROWS_AS(var(i, {0}), DTypeError);
  CHECK_THROWS_AS(softmax(i, 0), DTypeError);
  CHECK_THROWS_AS(log_softmax(Tensor::zeros({2}, DType::Bool), 0), DTypeError);
  CHECK_THROWS_AS(argmax(Tensor::zeros({2}, DType::Bool), 0), DTypeError);
  CHECK_THROWS_AS(mean(Tensor::zeros({2}, DType::Bool)), DTypeError);
  CHECK_THROWS_WITH(sum(Tensor()), Contains("sum: expected a defined tensor"));
}
