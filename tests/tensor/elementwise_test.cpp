// Elementwise ops: values in closed form, broadcasting, strided inputs, dtypes and promotion,
// integer width, NaN rules and every error path. (Random inputs against PyTorch: golden_ops_test.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_vector_math.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor f32(std::vector<float> v, Shape shape) { return Tensor::from_vector<float>(v, shape); }
Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(v); }
Tensor i64(std::vector<std::int64_t> v) { return Tensor::from_vector<std::int64_t>(v); }
Tensor boolean(std::vector<bool> v) { return Tensor::from_vector<bool>(v); }

// 0, 1, ..., numel - 1 as F32 in `shape`.
Tensor iota(Shape shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector<float>(v, shape);
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("arithmetic ops and operators compute elementwise values", "[tensor]") {
  const Tensor a = f32({1, -2, 3.5f, 4}, {2, 2});
  const Tensor b = f32({2, 4, -0.5f, 8}, {2, 2});
  CHECK_THAT(a + b, TensorEqual(f32({3, 2, 3, 12}, {2, 2})));
  CHECK_THAT(a - b, TensorEqual(f32({-1, -6, 4, -4}, {2, 2})));
  CHECK_THAT(a * b, TensorEqual(f32({2, -8, -1.75f, 32}, {2, 2})));
  CHECK_THAT(a / b, TensorEqual(f32({0.5f, -0.5f, -7, 0.5f}, {2, 2})));
  CHECK_THAT(-a, TensorEqual(f32({-1, 2, -3.5f, -4}, {2, 2})));
  CHECK_THAT(maximum(a, b), TensorEqual(f32({2, 4, 3.5f, 8}, {2, 2})));
  CHECK_THAT(minimum(a, b), TensorEqual(f32({1, -2, -0.5f, 4}, {2, 2})));
  CHECK_THAT(pow(a, 2), TensorEqual(f32({1, 4, 12.25f, 16}, {2, 2})));
  CHECK_THAT(pow(b.narrow(0, 1, 1), f32({2, 3})), TensorNear(f32({0.25f, 512}, {1, 2})));
  // Tensor-scalar forms, on either side.
  CHECK_THAT(a + 1, TensorEqual(f32({2, -1, 4.5f, 5}, {2, 2})));
  CHECK_THAT(a - 1.5, TensorEqual(f32({-0.5f, -3.5f, 2, 2.5f}, {2, 2})));
  CHECK_THAT(a * 2, TensorEqual(f32({2, -4, 7, 8}, {2, 2})));
  CHECK_THAT(a / 4, TensorEqual(f32({0.25f, -0.5f, 0.875f, 1}, {2, 2})));
  CHECK_THAT(10 - a, TensorEqual(f32({9, 12, 6.5f, 6}, {2, 2})));
  CHECK_THAT(1 + a, TensorEqual(a + 1));
  CHECK_THAT(3 * a, TensorEqual(a * 3));
  CHECK_THAT(7 / b, TensorEqual(f32({3.5f, 1.75f, -14, 0.875f}, {2, 2})));
}

TEST_CASE("unary math ops match their closed forms", "[tensor]") {
  const std::vector<double> v = {-3.0, -0.5, 0.0, 0.25, 2.0};
  const Tensor x = Tensor::from_vector<double>(v);
  auto expect = [&](auto fn) {
    std::vector<double> out;
    for (double e : v) out.push_back(fn(e));
    return Tensor::from_vector<double>(out);
  };
  CHECK_THAT(exp(x), TensorNear(expect([](double e) { return std::exp(e); }), 1e-15, 0));
  CHECK_THAT(tanh(x), TensorNear(expect([](double e) { return std::tanh(e); }), 1e-15, 0));
  CHECK_THAT(sigmoid(x),
             TensorNear(expect([](double e) { return 1 / (1 + std::exp(-e)); }), 1e-15, 0));
  CHECK_THAT(
      gelu(x),
      TensorNear(expect([](double e) { return 0.5 * e * (1 + std::erf(e / std::sqrt(2.0))); }),
                 1e-15, 1e-300));
  CHECK_THAT(relu(x), TensorEqual(expect([](double e) { return e > 0 ? e : 0.0; })));
  CHECK_THAT(abs(x), TensorEqual(expect([](double e) { return std::fabs(e); })));
  CHECK_THAT(sign(x), TensorEqual(Tensor::from_vector<double>({-1, -1, 0, 1, 1})));
  const Tensor p = Tensor::from_vector<double>({0.25, 1, 4});
  CHECK_THAT(sqrt(p), TensorEqual(Tensor::from_vector<double>({0.5, 1, 2})));
  CHECK_THAT(log(p),
             TensorNear(Tensor::from_vector<double>({std::log(0.25), 0, std::log(4.0)}), 1e-15, 0));
  // Float results are the float computation, not a rounded double one: F32 exp is the CPU
  // backend's branch-free exp_f32 (within 1 ulp of libm's expf: tests/tensor/vector_math_test).
  const Tensor xf = f32({0.3f, -1.7f});
  CHECK_THAT(exp(xf), TensorEqual(f32({cpu::exp_f32(0.3f), cpu::exp_f32(-1.7f)})));
}

TEST_CASE("broadcasting follows NumPy rules: size-1 dims, rank promotion, zero-size dims",
          "[tensor]") {
  const Tensor col = f32({1, 2, 3}, {3, 1});
  const Tensor row = f32({10, 20, 30, 40}, {1, 4});
  CHECK_THAT(col + row, TensorEqual(f32({11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}, {3, 4})));
  const Tensor cube = iota({2, 3, 4});
  const Tensor last = f32({1, 2, 3, 4});
  const Tensor sum = cube + last;
  REQUIRE(sum.shape() == Shape{2, 3, 4});
  CHECK(sum.to_vector<float>()[23] == 27);
  CHECK(sum.to_vector<float>()[5] == 7);
  CHECK_THAT(Tensor::scalar(5) * col, TensorEqual(f32({5, 10, 15}, {3, 1})));
  CHECK_THAT(Tensor::scalar(2) - Tensor::scalar(3), TensorEqual(Tensor::scalar(-1)));
  // Zero-size dims broadcast against 1 and stay empty.
  const Tensor empty = Tensor::zeros({0, 3});
  CHECK((empty + f32({1, 2, 3}, {1, 3})).shape() == Shape{0, 3});
  CHECK((Tensor::zeros({2, 0}) * Tensor::ones({2, 1})).shape() == Shape{2, 0});
  CHECK((Tensor::zeros({0}) + Tensor::scalar(1)).shape() == Shape{0});
  CHECK(gt(Tensor::zeros({4, 0, 2}), Tensor::zeros({1, 2})).shape() == Shape{4, 0, 2});
}

TEST_CASE("elementwise ops read transposed, narrowed and expanded views", "[tensor]") {
  const Tensor m = iota({3, 4});
  const Tensor t = m.transpose(0, 1);  // [4, 3], strides (1, 4)
  CHECK_THAT(t + t, TensorEqual((t.contiguous() * 2)));
  CHECK_THAT(t * t.contiguous(), TensorEqual(t.contiguous() * t.contiguous()));
  const Tensor mid = m.narrow(1, 1, 2);  // [3, 2] with a row stride of 4
  CHECK_THAT(mid - 1, TensorEqual(f32({0, 1, 4, 5, 8, 9}, {3, 2})));
  const Tensor wide = f32({1, 2, 3}, {3, 1}).expand({3, 4});
  CHECK_THAT(wide * m, TensorEqual(f32({0, 1, 2, 3, 8, 10, 12, 14, 24, 27, 30, 33}, {3, 4})));
  CHECK_THAT(exp(t), TensorEqual(exp(t.contiguous())));
  CHECK_THAT(where(gt(t, 5), t, Tensor::scalar(-1.0f)),
             TensorEqual(where(gt(t.contiguous(), 5), t.contiguous(), Tensor::scalar(-1.0f))));
  // A view with a storage offset, written through a fresh output.
  const Tensor tail = m.select(0, 2);
  CHECK_THAT(tail / 2, TensorEqual(f32({4, 4.5f, 5, 5.5f})));
}

TEST_CASE("every dtype keeps its type and values through add, sub, mul, maximum, neg", "[tensor]") {
  for (DType dtype : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64}) {
    INFO("dtype " << dtype);
    const Tensor a = Tensor::from_vector<double>({1, -2, 3, 100}).to(dtype);
    const Tensor b = Tensor::from_vector<double>({4, 5, -6, 7}).to(dtype);
    auto as = [&](std::vector<double> v) { return Tensor::from_vector<double>(v).to(dtype); };
    CHECK_THAT(a + b, TensorEqual(as({5, 3, -3, 107})));
    CHECK_THAT(a - b, TensorEqual(as({-3, -7, 9, 93})));
    CHECK_THAT(a * b, TensorEqual(as({4, -10, -18, 700})));
    CHECK_THAT(maximum(a, b), TensorEqual(as({4, 5, 3, 100})));
    CHECK_THAT(minimum(a, b), TensorEqual(as({1, -2, -6, 7})));
    CHECK_THAT(-a, TensorEqual(as({-1, 2, -3, -100})));
    CHECK_THAT(abs(a), TensorEqual(as({1, 2, 3, 100})));
    CHECK_THAT(relu(a), TensorEqual(as({1, 0, 3, 100})));
    CHECK_THAT(sign(a), TensorEqual(as({1, -1, 1, 1})));
    CHECK_THAT(lt(a, b), TensorEqual(boolean({true, true, false, false})));
    CHECK_THAT(a * 2, TensorEqual(as({2, -4, 6, 200})));
  }
}

TEST_CASE("F16 and BF16 compute in F32 and round once on store", "[tensor]") {
  // 1 + 2^-11 is a tie in F16 and rounds to even (1); 1 + 3 * 2^-12 rounds up to 1 + 2^-10.
  const Tensor one = Tensor::from_vector<float>({1, 1}).to(DType::F16);
  const Tensor small = Tensor::from_vector<float>({0x1p-11f, 0x3p-12f}).to(DType::F16);
  CHECK_THAT(one + small,
             TensorEqual(Tensor::from_vector<float>({1, 1 + 0x1p-10f}).to(DType::F16)));
  // BF16: 256 + 1 is exactly between 256 and 258, and rounds to even (256).
  const Tensor b = Tensor::from_vector<float>({256, 3}).to(DType::BF16);
  CHECK_THAT(b + Tensor::from_vector<float>({1, 0.5f}).to(DType::BF16),
             TensorEqual(Tensor::from_vector<float>({256, 3.5f}).to(DType::BF16)));
  const Tensor h = Tensor::from_vector<float>({0.5f, 2}).to(DType::F16);
  CHECK_THAT(
      exp(h),
      TensorEqual(Tensor::from_vector<float>({std::exp(0.5f), std::exp(2.0f)}).to(DType::F16)));
}

TEST_CASE("dtypes promote like PyTorch, tensor and scalar operands alike", "[tensor]") {
  const Tensor i32 = Tensor::from_vector<std::int32_t>({1, 2});
  const Tensor b = boolean({true, false});
  CHECK((i32 + f32({0.5f, 0.5f})).dtype() == DType::F32);
  CHECK((i32 + i64({1, 1})).dtype() == DType::I64);
  CHECK((b + i32).dtype() == DType::I32);
  CHECK_THAT(b + i32, TensorEqual(Tensor::from_vector<std::int32_t>({2, 2})));
  CHECK((Tensor::ones({2}, DType::F16) + Tensor::ones({2}, DType::BF16)).dtype() == DType::F32);
  CHECK((Tensor::ones({2}, DType::F16) * Tensor::ones({2}, DType::F64)).dtype() == DType::F64);
  CHECK_THAT(i32 + 2.5, TensorEqual(f32({3.5f, 4.5f})));
  CHECK_THAT(i32 * 3, TensorEqual(Tensor::from_vector<std::int32_t>({3, 6})));
  CHECK_THAT(b + 1, TensorEqual(i64({2, 1})));
  CHECK_THAT(Tensor::ones({2}, DType::F16) / 4, TensorEqual(Tensor::full({2}, 0.25, DType::F16)));
  CHECK_THAT(eq(b, true), TensorEqual(b));
  CHECK_THAT(gt(i32, 1.5), TensorEqual(boolean({false, true})));
}

TEST_CASE("integers keep their width and wrap like two's complement", "[tensor]") {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;  // not representable as a double
  const Tensor x = i64({big, -big});
  CHECK(((x + 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 1, -big + 1}));
  CHECK(((x * 2).to_vector<std::int64_t>() == std::vector<std::int64_t>{2 * big, -2 * big}));
  CHECK(((x - x).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0}));
  CHECK(eq(x, i64({big, -big + 1})).to_vector<bool>() == std::vector<bool>{true, false});
  const std::int32_t top = std::numeric_limits<std::int32_t>::max();
  const Tensor t =
      Tensor::from_vector<std::int32_t>({top, std::numeric_limits<std::int32_t>::min()});
  CHECK((t + 1).to_vector<std::int32_t>()[0] == std::numeric_limits<std::int32_t>::min());
  CHECK((-t).to_vector<std::int32_t>()[1] == std::numeric_limits<std::int32_t>::min());
}

TEST_CASE("NaN propagates through maximum, minimum and relu and compares unequal", "[tensor]") {
  const Tensor a = f32({kNan, 1, 2});
  const Tensor b = f32({0, kNan, 1});
  CHECK_THAT(maximum(a, b), TensorEqual(f32({kNan, kNan, 2})));
  CHECK_THAT(minimum(a, b), TensorEqual(f32({kNan, kNan, 1})));
  CHECK_THAT(relu(a), TensorEqual(f32({kNan, 1, 2})));
  CHECK_THAT(sign(a), TensorEqual(f32({0, 1, 1})));
  CHECK_THAT(eq(a, a), TensorEqual(boolean({false, true, true})));
  CHECK_THAT(ne(a, a), TensorEqual(boolean({true, false, false})));
  CHECK_THAT(lt(a, b), TensorEqual(boolean({false, false, false})));
  CHECK_THAT(sqrt(f32({-1})), TensorEqual(f32({kNan})));
  CHECK_THAT(log(f32({0})), TensorEqual(f32({-std::numeric_limits<float>::infinity()})));
}

TEST_CASE("comparisons and logical ops give Bool with broadcasting", "[tensor]") {
  const Tensor a = f32({1, 2, 3}, {3, 1});
  const Tensor b = f32({2, 3}, {1, 2});
  CHECK_THAT(lt(a, b), TensorEqual(Tensor::from_vector<bool>(
                           {true, true, false, true, false, false}, {3, 2})));
  CHECK_THAT(ge(a, b), TensorEqual(logical_not(lt(a, b))));
  CHECK_THAT(le(a, 2), TensorEqual(Tensor::from_vector<bool>({true, true, false}, {3, 1})));
  CHECK_THAT(ne(a, 2), TensorEqual(Tensor::from_vector<bool>({true, false, true}, {3, 1})));
  CHECK_THAT(ge(a, 2), TensorEqual(Tensor::from_vector<bool>({false, true, true}, {3, 1})));
  CHECK_THAT(gt(i64({1, 5}), i64({1, 4})), TensorEqual(boolean({false, true})));
  const Tensor p = boolean({true, true, false, false});
  const Tensor q = boolean({true, false, true, false});
  CHECK_THAT(logical_and(p, q), TensorEqual(boolean({true, false, false, false})));
  CHECK_THAT(logical_or(p, q), TensorEqual(boolean({true, true, true, false})));
  CHECK_THAT(logical_not(p), TensorEqual(boolean({false, false, true, true})));
  // Any dtype reads as "nonzero is true".
  CHECK_THAT(logical_and(f32({0, 2, kNan}), i64({3, 0, 1})),
             TensorEqual(boolean({false, false, true})));
  CHECK_THAT(logical_not(f32({0, -1})), TensorEqual(boolean({true, false})));
  CHECK_THAT(eq(p, q), TensorEqual(boolean({true, false, false, true})));
}

TEST_CASE("where selects with broadcasting over condition and both branches", "[tensor]") {
  const Tensor cond = Tensor::from_vector<bool>({true, false}, {2, 1});
  const Tensor a = f32({1, 2, 3}, {1, 3});
  const Tensor out = where(cond, a, Tensor::scalar(-1.0f));
  CHECK_THAT(out, TensorEqual(f32({1, 2, 3, -1, -1, -1}, {2, 3})));
  const Tensor mixed = where(boolean({true, false}), Tensor::from_vector<std::int32_t>({1, 2}),
                             Tensor::from_vector<double>({0.5, 0.25}));
  CHECK_THAT(mixed, TensorEqual(Tensor::from_vector<double>({1, 0.25})));
  for (DType dtype : {DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    const Tensor x = Tensor::ones({3}, dtype);
    const Tensor y = Tensor::zeros({3}, dtype);
    CHECK_THAT(where(boolean({false, true, false}), x, y),
               TensorEqual(Tensor::from_vector<double>({0, 1, 0}).to(dtype)));
  }
  // Long flat runs (split across threads) with either branch a broadcast value, as in a relu
  // backward's where(mask, g, 0), and with both.
  Generator gen(3);
  const Tensor v = Tensor::randn({70001}, gen);
  const Tensor c = gt(v, 0.0);
  const Tensor s = Tensor::scalar(2.5f);
  const std::vector<float> vs = v.to_vector<float>();
  const std::vector<float> got_x = where(c, v, s).to_vector<float>();
  const std::vector<float> got_y = where(c, s, v).to_vector<float>();
  const std::vector<float> got_both = where(c, s, Tensor::scalar(-1.0f)).to_vector<float>();
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const bool pick = vs[i] > 0.0f;
    wrong += got_x[i] != (pick ? vs[i] : 2.5f);
    wrong += got_y[i] != (pick ? 2.5f : vs[i]);
    wrong += got_both[i] != (pick ? 2.5f : -1.0f);
  }
  CHECK(wrong == 0);
}

TEST_CASE("equal and allclose compare values after broadcasting", "[tensor]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(equal(f32({1, 2}), f32({1, 2})));
  CHECK_FALSE(equal(f32({1, 2}), f32({1, 3})));
  CHECK_FALSE(equal(f32({1, 2}), f32({1, 2}, {2, 1})));
  CHECK_FALSE(equal(f32({kNan}), f32({kNan})));
  CHECK(equal(Tensor::zeros({0, 2}), Tensor::zeros({0, 2})));
  CHECK(allclose(f32({1, 1000}), f32({1.000001f, 1000.001f})));
  CHECK_FALSE(allclose(f32({1, 1000}), f32({1.001f, 1000})));
  CHECK(allclose(f32({1, 1000}), f32({1.001f, 1000}), 1e-2));
  CHECK(allclose(f32({inf, -inf}), f32({inf, -inf})));
  CHECK_FALSE(allclose(f32({inf}), f32({-inf})));
  CHECK_FALSE(allclose(f32({kNan}), f32({kNan})));
  CHECK(allclose(f32({2, 2}, {2, 1}), Tensor::scalar(2.0)));
}

TEST_CASE("large elementwise ops give the same result on one and two threads", "[tensor]") {
  const int saved = cpu::num_threads();
  const Tensor a = iota({300, 1000});  // above the parallel threshold
  const Tensor b = iota({1000});
  cpu::set_num_threads(1);
  const Tensor one = a.transpose(0, 1) * 2 + b.reshape({1000, 1});
  cpu::set_num_threads(2);
  const Tensor two = a.transpose(0, 1) * 2 + b.reshape({1000, 1});
  cpu::set_num_threads(saved);
  CHECK_THAT(two, TensorEqual(one));
  const std::vector<float> v = two.to_vector<float>();
  CHECK(v[0] == 0);
  CHECK(v[1] == 2000);               // a[1][0] * 2 + b[0]
  CHECK(v[299999] == 599998 + 999);  // a[299][999] * 2 + b[999]
}

TEST_CASE("large outputs written with streaming stores hold the right values", "[tensor]") {
  // Rows of 2^20 + 3 floats (over the 4 MiB streaming threshold, on one thread) cut from rows of
  // 2^20 + 5: the second output row starts off a cache line, exercising the unaligned head and the
  // tail. Compared element by element (a matcher would copy 8 MiB twice more).
  const std::int64_t n = (std::int64_t{1} << 20) + 3;
  const Tensor x = iota({2, n + 2}).narrow(1, 0, n);
  const int saved = cpu::num_threads();
  cpu::set_num_threads(1);
  const std::vector<float> tripled = (x * 2 + x).to_vector<float>();
  const std::vector<float> negated = (-x).to_vector<float>();
  cpu::set_num_threads(saved);
  REQUIRE(tripled.size() == static_cast<std::size_t>(2 * n));
  std::int64_t bad = -1;
  for (std::int64_t r = 0; r < 2 && bad < 0; ++r) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(r * (n + 2) + i);
      const auto k = static_cast<std::size_t>(r * n + i);
      if (tripled[k] != 3 * v || negated[k] != -v) {
        bad = r * n + i;
        break;
      }
    }
  }
  CHECK(bad == -1);  // the first wrong flat index otherwise
}

TEST_CASE("elementwise ops reject bad dtypes, shapes and devices with clear errors", "[tensor]") {
  const Tensor i = Tensor::from_vector<std::int32_t>({1, 2});
  const Tensor b = boolean({true, false});
  using Catch::Contains;
  CHECK_THROWS_MATCHES(exp(i), DTypeError,
                       Catch::Message("exp: expected a floating dtype (F16, BF16, F32, F64), got "
                                      "I32; convert with to(DType::F32)"));
  CHECK_THROWS_AS(log(i), DTypeError);
  CHECK_THROWS_AS(sqrt(i), DTypeError);
  CHECK_THROWS_AS(tanh(i), DTypeError);
  CHECK_THROWS_AS(sigmoid(i), DTypeError);
  CHECK_THROWS_AS(gelu(i), DTypeError);
  CHECK_THROWS_WITH(i / i, Contains("div: expected a floating dtype") && Contains("got I32"));
  CHECK_THROWS_AS(i / 2, DTypeError);
  CHECK_THROWS_AS(pow(i, 2), DTypeError);
  CHECK_THROWS_WITH(b + b, Contains("add: expected numeric operands") && Contains("got Bool"));
  CHECK_THROWS_AS(b * b, DTypeError);
  CHECK_THROWS_AS(-b, DTypeError);
  CHECK_THROWS_AS(abs(b), DTypeError);
  CHECK_THROWS_AS(maximum(b, b), DTypeError);
  CHECK_THROWS_WITH(where(i, i, i), Contains("where: expected a Bool condition, got I32"));
  CHECK_THROWS_WITH(f32({1, 2, 3}) + f32({1, 2}),
                    Contains("add: shapes [3] and [2] do not broadcast"));
  CHECK_THROWS_AS(lt(Tensor::zeros({2, 3}), Tensor::zeros({2})), ShapeError);
  CHECK_THROWS_AS(logical_and(Tensor::zeros({2, 3}), Tensor::zeros({3, 2})), ShapeError);
  CHECK_THROWS_AS(where(Tensor::zeros({3}, DType::Bool), f32({1, 2}), Tensor::scalar(0)),
                  ShapeError);
  CHECK_THROWS_WITH(Tensor() + f32({1}), Contains("add: expected a defined tensor"));
  // A tensor whose storage claims to be on a GPU (host memory underneath: never dereferenced).
  static float fake[2] = {1, 2};
  auto storage = std::make_shared<Storage>(fake, sizeof(fake), Device::cuda(0), nullptr);
  const Tensor gpu(storage, Shape{2}, Shape{1}, 0, DType::F32);
  CHECK_THROWS_WITH(f32({1, 2}) + gpu,
                    Contains("add: expected both operands on one device, got cpu and cuda:0"));
  CHECK_THROWS_AS(where(boolean({true, true}), gpu, f32({1, 2})), DeviceError);
}
