// The tensor core: creation, element access for every dtype, F16/BF16 conversions, to(DType) for
// all pairs, views sharing storage, reshape/contiguous copying only when needed, copy_ with
// broadcasting, every error path, and the stub backend behind the Backend seam.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>

#include "tensor/backend/backend.h"
#include "tensor/backend/stub/stub_backend.h"
#include "tensor/core/tensor.h"
#include "tensor/ops/linalg.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

namespace {

constexpr DType kAllDTypes[] = {DType::F16, DType::BF16, DType::F32, DType::F64,
                                DType::I32, DType::I64,  DType::Bool};

std::uint16_t half_bits(float v) { return Half(v).bits; }
std::uint16_t bf16_bits(float v) { return BFloat16(v).bits; }
float from_half(std::uint16_t bits) {
  Half h;
  h.bits = bits;
  return static_cast<float>(h);
}
float from_bf16(std::uint16_t bits) {
  BFloat16 b;
  b.bits = bits;
  return static_cast<float>(b);
}

std::vector<double> values(const Tensor& t) { return t.to(DType::F64).to_vector<double>(); }

}  // namespace

TEST_CASE("creation functions give the requested shape, dtype and values", "[tensor]") {
  for (DType dtype : kAllDTypes) {
    INFO(dtype);
    const Tensor z = Tensor::zeros({2, 3}, dtype);
    REQUIRE(z.shape() == Shape{2, 3});
    REQUIRE(z.dtype() == dtype);
    REQUIRE(z.numel() == 6);
    REQUIRE(z.dim() == 2);
    REQUIRE(z.is_contiguous());
    REQUIRE(z.device() == Device::cpu());
    REQUIRE(values(z) == std::vector<double>(6, 0.0));
    REQUIRE(values(Tensor::ones({4}, dtype)) == std::vector<double>(4, 1.0));
    REQUIRE(values(Tensor::full({2}, 1, dtype)) == std::vector<double>(2, 1.0));
    REQUIRE(Tensor::empty({3, 0, 2}, dtype).numel() == 0);
    REQUIRE(Tensor::scalar(1, dtype).dim() == 0);
    REQUIRE(values(Tensor::scalar(1, dtype)) == std::vector<double>{1.0});
  }
  REQUIRE(values(Tensor::full({2, 2}, -2.5, DType::F64)) == std::vector<double>(4, -2.5));
  // A 64-bit integer fill beyond 2^53 stays exact.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  REQUIRE(Tensor::full({1}, big, DType::I64).item<std::int64_t>() == big);
  REQUIRE(Tensor::scalar(3.5).item<float>() == 3.5f);
  REQUIRE(Tensor::scalar(3.5).shape() == Shape{});
  REQUIRE(Tensor::scalar(3.5).numel() == 1);
  REQUIRE(Tensor::arange(0, 4).dtype() == DType::I64);
  REQUIRE_FALSE(Tensor().defined());
  REQUIRE(Tensor().to_string() == "Tensor(undefined)");
  REQUIRE(Tensor::zeros({2, 3}).to_string() == "tensor([[0., 0., 0.],\n        [0., 0., 0.]])");
}

TEST_CASE("from_vector, to_vector and item round-trip every element type", "[tensor]") {
  const auto check = [](auto sample) {
    using T = decltype(sample);
    const std::vector<T> v = {T(1), T(0), sample};
    const Tensor t = Tensor::from_vector(v, {3});
    REQUIRE(t.dtype() == dtype_of<T>());
    REQUIRE(t.template to_vector<T>() == v);
    REQUIRE(t.narrow(0, 2, 1).template item<T>() == sample);
    REQUIRE(Tensor::from_vector(v, {3, 1}).select(0, 0).template item<T>() == T(1));
  };
  check(-1.5f);
  check(1e300);
  check(std::int32_t{-7});
  check(std::numeric_limits<std::int64_t>::min());
  check(true);
  const std::vector<Half> halves = {Half(1.5f), Half(-0.25f)};
  const std::vector<Half> back = Tensor::from_vector(halves, {2}).to_vector<Half>();
  REQUIRE(back[0].bits == halves[0].bits);
  REQUIRE(back[1].bits == halves[1].bits);
  const std::vector<BFloat16> brains = {BFloat16(3.0f)};
  REQUIRE(Tensor::from_vector(brains, {1}).item<BFloat16>().bits == brains[0].bits);
  // A transposed view reads in logical (row-major) order.
  const Tensor m = Tensor::from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  REQUIRE(m.transpose(0, 1).to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("F16 conversions are exact where representable and round to nearest even", "[tensor]") {
  REQUIRE(half_bits(1.0f) == 0x3c00);
  REQUIRE(half_bits(-2.0f) == 0xc000);
  REQUIRE(half_bits(65504.0f) == 0x7bff);  // the largest half
  REQUIRE(half_bits(0.1f) == 0x2e66);
  REQUIRE(half_bits(-0.0f) == 0x8000);
  // Ties: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 and goes to the even 1; 1 + 3 * 2^-11
  // goes to the even 1 + 2^-9.
  REQUIRE(half_bits(1.0f + 0x1.0p-11f) == 0x3c00);
  REQUIRE(half_bits(1.0f + 3 * 0x1.0p-11f) == 0x3c02);
  REQUIRE(half_bits(1.0f + 0x1.0p-11f + 0x1.0p-20f) == 0x3c01);  // just above the tie
  // Overflow: 65519 rounds down to 65504, 65520 (the midpoint to 2^16) up to infinity.
  REQUIRE(half_bits(65519.0f) == 0x7bff);
  REQUIRE(half_bits(65520.0f) == 0x7c00);
  REQUIRE(half_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  REQUIRE(half_bits(-std::numeric_limits<float>::infinity()) == 0xfc00);
  REQUIRE(std::isnan(from_half(half_bits(std::numeric_limits<float>::quiet_NaN()))));
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to 0, 3 * 2^-25 ties to 2 * 2^-24.
  REQUIRE(half_bits(0x1.0p-14f) == 0x0400);  // the smallest normal
  REQUIRE(half_bits(0x1.0p-24f) == 0x0001);
  REQUIRE(half_bits(0x1.0p-25f) == 0x0000);
  REQUIRE(half_bits(3 * 0x1.0p-25f) == 0x0002);
  REQUIRE(half_bits(1023 * 0x1.0p-24f) == 0x03ff);
  REQUIRE(half_bits(-0x1.0p-24f) == 0x8001);
  REQUIRE(from_half(0x0001) == 0x1.0p-24f);
  REQUIRE(from_half(0x03ff) == 1023 * 0x1.0p-24f);
  REQUIRE(from_half(0x7bff) == 65504.0f);
  REQUIRE(from_half(0xfc00) == -std::numeric_limits<float>::infinity());
  // Every half value converts to float and back to itself.
  bool all_round_trip = true;
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = from_half(static_cast<std::uint16_t>(bits));
    if (std::isnan(f)) continue;
    all_round_trip = all_round_trip && half_bits(f) == bits;
  }
  REQUIRE(all_round_trip);
  // Through tensors: F32 -> F16 -> F32.
  const Tensor t = Tensor::from_vector<float>({1.0f + 0x1.0p-11f, 65520.0f, 0x1.0p-24f}, {3});
  REQUIRE(t.to(DType::F16).to(DType::F32).to_vector<float>() ==
          std::vector<float>{1.0f, std::numeric_limits<float>::infinity(), 0x1.0p-24f});
}

TEST_CASE("BF16 conversions keep the top half of a float, rounding to nearest even", "[tensor]") {
  REQUIRE(bf16_bits(1.0f) == 0x3f80);
  REQUIRE(bf16_bits(-2.0f) == 0xc000);
  REQUIRE(bf16_bits(1.0f + 0x1.0p-8f) == 0x3f80);      // tie to even
  REQUIRE(bf16_bits(1.0f + 3 * 0x1.0p-8f) == 0x3f82);  // tie to even
  REQUIRE(bf16_bits(1.0f + 0x1.0p-8f + 0x1.0p-16f) == 0x3f81);
  REQUIRE(bf16_bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  REQUIRE(bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  REQUIRE(std::isnan(from_bf16(bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low half stays a NaN (not infinity).
  REQUIRE(std::isnan(from_bf16(bf16_bits(std::bit_cast<float>(0x7f800001u)))));
  REQUIRE(from_bf16(bf16_bits(0x1.0p-133f)) == 0x1.0p-133f);  // float subnormal, exact
  REQUIRE(from_bf16(0x3f81) == 1.0f + 0x1.0p-7f);
  bool all_round_trip = true;
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = from_bf16(static_cast<std::uint16_t>(bits));
    if (std::isnan(f)) continue;
    all_round_trip = all_round_trip && bf16_bits(f) == bits;
  }
  REQUIRE(all_round_trip);
}

TEST_CASE("to(DType) converts between every pair of dtypes", "[tensor]") {
  const std::vector<double> source = {0, 1, 2, 5, -3};
  for (DType from : kAllDTypes) {
    const Tensor t = Tensor::from_vector(source, {5}).to(from);
    std::vector<double> in = source;
    if (from == DType::Bool) {
      for (double& v : in) v = v != 0 ? 1 : 0;
    }
    for (DType to : kAllDTypes) {
      INFO(from << " -> " << to);
      const Tensor converted = t.to(to);
      REQUIRE(converted.dtype() == to);
      std::vector<double> expected = in;
      if (to == DType::Bool) {
        for (double& v : expected) v = v != 0 ? 1 : 0;
      }
      REQUIRE(values(converted) == expected);
      // Non-contiguous sources convert too.
      REQUIRE(values(t.narrow(0, 1, 4).as_strided({2}, {2}, t.offset() + 1).to(to)) ==
              std::vector<double>{expected[1], expected[3]});
    }
  }
  // Floats to integers truncate toward zero; to(same dtype) returns the tensor itself.
  const Tensor f = Tensor::from_vector<float>({2.7f, -2.7f}, {2});
  REQUIRE(f.to(DType::I32).to_vector<std::int32_t>() == std::vector<std::int32_t>{2, -2});
  REQUIRE(f.to(DType::F32).storage() == f.storage());
  REQUIRE(f.to(Device::cpu()).storage() == f.storage());
}

TEST_CASE("views share storage and read the right elements", "[tensor]") {
  const Tensor x = Tensor::arange(0, 24).reshape({2, 3, 4});  // x[i][j][k] = 12 i + 4 j + k
  const auto same = [&](const Tensor& v) { return v.storage() == x.storage(); };
  const auto ints = [](const Tensor& t) { return t.to_vector<std::int64_t>(); };

  const Tensor t = x.transpose(0, 2);  // [4, 3, 2]
  REQUIRE(same(t));
  REQUIRE(t.shape() == Shape{4, 3, 2});
  REQUIRE_FALSE(t.is_contiguous());
  REQUIRE(t.select(0, 1).select(0, 2).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{9, 21});
  const Tensor p = x.permute({1, 2, 0});  // p[j][k][i]
  REQUIRE(same(p));
  REQUIRE(ints(p.select(0, 2).select(0, 3)) == std::vector<std::int64_t>{11, 23});
  const Tensor n = x.narrow(2, 1, 2);
  REQUIRE(same(n));
  REQUIRE(ints(n.select(0, 1).select(0, 0)) == std::vector<std::int64_t>{13, 14});
  REQUIRE(ints(x.narrow(1, -1, 1).flatten()) ==
          std::vector<std::int64_t>{8, 9, 10, 11, 20, 21, 22, 23});
  const Tensor e = x.select(1, 0).select(1, 1).unsqueeze(1).expand({2, 3});  // column 1 of row 0
  REQUIRE(same(e));
  REQUIRE(e.strides()[1] == 0);
  REQUIRE(ints(e) == std::vector<std::int64_t>{1, 1, 1, 13, 13, 13});
  REQUIRE(ints(Tensor::arange(0, 3).expand({2, -1})) ==
          std::vector<std::int64_t>{0, 1, 2, 0, 1, 2});
  const Tensor r = x.reshape({6, 4});
  REQUIRE(same(r));
  REQUIRE(ints(r.select(0, 5)) == std::vector<std::int64_t>{20, 21, 22, 23});
  REQUIRE(same(x.view({4, -1})));
  REQUIRE(x.view({4, -1}).shape() == Shape{4, 6});
  const Tensor u = x.unsqueeze(-1);
  REQUIRE(u.shape() == Shape{2, 3, 4, 1});
  REQUIRE(same(u.squeeze(3)));
  REQUIRE(u.squeeze(3).shape() == Shape{2, 3, 4});
  REQUIRE(x.squeeze(0).shape() == Shape{2, 3, 4});  // size 2: unchanged
  REQUIRE(x.unsqueeze(0).shape() == Shape{1, 2, 3, 4});
  REQUIRE(x.flatten(1).shape() == Shape{2, 12});
  REQUIRE(same(x.flatten(1)));
  REQUIRE(x.flatten().shape() == Shape{24});
  REQUIRE(x.select(2, -1).shape() == Shape{2, 3});
  REQUIRE(ints(x.select(2, -1).select(0, 1)) == std::vector<std::int64_t>{15, 19, 23});
  REQUIRE(x.size(-1) == 4);
  // Writes through a view show in the base.
  Tensor row = x.select(0, 1).select(0, 2);
  row.fill_(-1);
  REQUIRE(x.to_vector<std::int64_t>()[20] == -1);
  REQUIRE(x.to_vector<std::int64_t>()[19] == 19);
}

TEST_CASE("reshape and contiguous copy only when the strides require it", "[tensor]") {
  const Tensor x = Tensor::arange(0, 6).reshape({2, 3});
  REQUIRE(x.contiguous().storage() == x.storage());
  REQUIRE(x.reshape({3, 2}).storage() == x.storage());
  const Tensor t = x.transpose(0, 1);
  const Tensor c = t.contiguous();
  REQUIRE(c.storage() != x.storage());
  REQUIRE(c.is_contiguous());
  REQUIRE(c.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 3, 1, 4, 2, 5});
  const Tensor flat = t.reshape({6});  // no view can flatten a transpose: a copy
  REQUIRE(flat.storage() != x.storage());
  REQUIRE(flat.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 3, 1, 4, 2, 5});
  // Splitting one dim of a transpose keeps a view.
  const Tensor wide = Tensor::arange(0, 12).reshape({3, 4}).transpose(0, 1);  // [4, 3]
  const Tensor split = wide.reshape({2, 2, 3});
  REQUIRE(split.storage() == wide.storage());
  REQUIRE(split.select(0, 1).select(0, 0).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{2, 6, 10});
  // A narrowed row block is still viewable as one run.
  const Tensor big = Tensor::arange(0, 12).reshape({4, 3});
  REQUIRE(big.narrow(0, 1, 2).reshape({6}).storage() == big.storage());
  REQUIRE(big.narrow(1, 0, 2).reshape({8}).storage() != big.storage());
  // A single element (a 0-d tensor, or one element strided anywhere) views as any shape of numel 1.
  const Tensor s = Tensor::scalar(7.0f);
  REQUIRE(s.view({1, 1}).storage() == s.storage());
  REQUIRE(s.reshape({1}).item<float>() == 7.0f);
  REQUIRE(s.view({1}).view({}).dim() == 0);
  const Tensor one = big.select(1, 2).narrow(0, 3, 1);  // [1], stride 3, offset 11
  REQUIRE(one.view({1, 1, 1}).item<std::int64_t>() == 11);
  // clone always copies.
  REQUIRE(x.clone().storage() != x.storage());
  REQUIRE_THAT(x.clone(), TensorEqual(x));
}

TEST_CASE("copy_ broadcasts and converts the source into the destination's memory", "[tensor]") {
  Tensor dst = Tensor::zeros({2, 3});
  dst.copy_(Tensor::from_vector<float>({1, 2, 3}, {3}));
  REQUIRE(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  dst.copy_(Tensor::scalar(7, DType::I64));
  REQUIRE(dst.to_vector<float>() == std::vector<float>(6, 7.0f));
  dst.copy_(Tensor::from_vector<std::int32_t>({4, 5}, {2, 1}));
  REQUIRE(dst.to_vector<float>() == std::vector<float>{4, 4, 4, 5, 5, 5});
  // Into a transposed view.
  Tensor base = Tensor::zeros({3, 2}, DType::F64);
  Tensor view = base.transpose(0, 1);
  view.copy_(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  REQUIRE(base.to_vector<double>() == std::vector<double>{1, 4, 2, 5, 3, 6});
  REQUIRE_THROWS_AS(dst.copy_(Tensor::zeros({4})), ShapeError);
}

TEST_CASE("bad sizes, dims and element access throw typed errors", "[tensor]") {
  REQUIRE_THROWS_MATCHES(Tensor::zeros({2, -1}), ShapeError,
                         Catch::Message("Tensor::zeros: expected non-negative sizes, got [2, -1]"));
  const std::int64_t huge = std::int64_t{1} << 40;
  REQUIRE_THROWS_MATCHES(Tensor::empty({huge, huge}), ShapeError,
                         Catch::Message("Tensor::empty: element count of [1099511627776, "
                                        "1099511627776] overflows int64"));
  REQUIRE_THROWS_AS(Tensor::empty({std::int64_t{1} << 62}, DType::F64), ShapeError);  // bytes
  REQUIRE(Tensor::empty({huge, huge, 0}).numel() == 0);  // a zero dim wins over the overflow
  REQUIRE_THROWS_AS(Shape({1, 1, 1, 1, 1, 1, 1, 1, 1}), ShapeError);

  const Tensor x = Tensor::zeros({2, 3});
  REQUIRE_THROWS_MATCHES(x.transpose(0, 2), IndexError,
                         Catch::Message("Tensor::transpose: expected a dim in [-2, 1] for a 2-d "
                                        "tensor, got 2"));
  REQUIRE_THROWS_AS(x.size(-3), IndexError);
  REQUIRE_THROWS_AS(x.select(1, 3), IndexError);
  REQUIRE_THROWS_AS(x.narrow(1, 2, 2), IndexError);
  REQUIRE_THROWS_AS(x.permute({0, 0}), ShapeError);
  REQUIRE_THROWS_AS(x.permute({0}), ShapeError);
  REQUIRE_THROWS_AS(x.unsqueeze(3), IndexError);
  REQUIRE_THROWS_AS(x.flatten(1, 0), IndexError);
  REQUIRE_THROWS_MATCHES(x.item<float>(), ShapeError,
                         Catch::Message("Tensor::item: expected a tensor with exactly 1 element, "
                                        "got shape [2, 3] with 6 elements"));
  // Reading converts from any dtype (tests/tensor/tensor_read_test.cpp).
  REQUIRE(x.to_vector<double>() == std::vector<double>(6, 0.0));
  REQUIRE_THROWS_AS(x.item<std::int64_t>(), ShapeError);
  REQUIRE(Tensor::scalar(1.0).item<double>() == 1.0);
  REQUIRE_THROWS_AS(x.data<std::int32_t>(), DTypeError);
  REQUIRE_THROWS_AS(Tensor().to_vector<float>(), ValueError);
  REQUIRE_THROWS_MATCHES(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), ShapeError,
                         Catch::Message("Tensor::from_vector: expected 4 values for shape [2, 2], "
                                        "got 3"));
}

TEST_CASE("view, reshape, expand and as_strided reject impossible geometry", "[tensor]") {
  const Tensor x = Tensor::zeros({2, 3});
  REQUIRE_THROWS_MATCHES(x.transpose(0, 1).view({6}), ShapeError,
                         Catch::Message("Tensor::view: expected strides compatible with [6], got "
                                        "shape [3, 2] with strides [1, 3]; use reshape() to "
                                        "copy"));
  REQUIRE_THROWS_AS(x.view({4, 2}), ShapeError);
  REQUIRE_THROWS_AS(x.reshape({-1, -1}), ShapeError);
  REQUIRE_THROWS_AS(x.reshape({-1, 4}), ShapeError);
  REQUIRE_THROWS_AS(x.reshape({-2, 3}), ShapeError);
  REQUIRE_THROWS_MATCHES(x.expand({2, 4}), ShapeError,
                         Catch::Message("Tensor::expand: cannot expand [2, 3] to [2, 4] (dim 1: "
                                        "expected 3 or a 1 to broadcast, got 4)"));
  REQUIRE_THROWS_AS(x.expand({3}), ShapeError);
  REQUIRE_THROWS_AS(x.expand({-1, 2, 3}), ShapeError);
  REQUIRE_THROWS_MATCHES(x.as_strided({2, 3}, {3, 1}, 1), IndexError,
                         Catch::Message("Tensor::as_strided: view [2, 3] with strides [3, 1] at "
                                        "offset 1 reaches outside its storage of 6 elements"));
  REQUIRE_THROWS_AS(x.as_strided({2}, {1, 1}, 0), ShapeError);
  REQUIRE_THROWS_AS(x.as_strided({2}, {1}, -1), IndexError);
  REQUIRE(x.as_strided({3, 2}, {1, 3}, 0).storage() == x.storage());
  REQUIRE(x.as_strided({0, 100}, {100, 1}, 0).numel() == 0);  // an empty view touches nothing
}

TEST_CASE("the stub backend throws not implemented naming itself and the op", "[tensor]") {
  StubBackend stub;
  REQUIRE(stub.name() == "stub");
  REQUIRE_FALSE(stub.supports(Op::Matmul, DType::F32));
  const Tensor cpu = Tensor::zeros({2, 2});
  REQUIRE_THROWS_MATCHES(stub.matmul(cpu, cpu, cpu), NotImplementedError,
                         Catch::Message("not implemented: stub::matmul"));
  REQUIRE_THROWS_MATCHES(stub.unary(Op::Exp, cpu, cpu), NotImplementedError,
                         Catch::Message("not implemented: stub::exp"));
  REQUIRE_THROWS_MATCHES(stub.allocate(16, Device::cuda(0)), NotImplementedError,
                         Catch::Message("not implemented: stub::allocate"));
  REQUIRE_THROWS_MATCHES(StubBackend("mygpu").fill(cpu, 0), NotImplementedError,
                         Catch::Message("not implemented: mygpu::fill"));

  // Registered for CUDA, it serves every CUDA tensor: creation and ops report the stub.
  struct Registration {  // restores the previous CUDA backend even when an assertion fails
    Backend* previous = nullptr;
    explicit Registration(Backend* b) {
      try {
        previous = &backend_for(Device::cuda(0));
      } catch (const DeviceError&) {
      }
      register_backend(DeviceType::CUDA, b);
    }
    ~Registration() { register_backend(DeviceType::CUDA, previous); }
  };
  const bool cuda_before = has_backend(DeviceType::CUDA);
  REQUIRE(has_backend(DeviceType::CPU));
  auto registration = std::make_unique<Registration>(&stub);
  REQUIRE(has_backend(DeviceType::CUDA));
  REQUIRE(&backend_for(Device::cuda(0)) == &stub);
  REQUIRE_THROWS_MATCHES(Tensor::zeros({2}, DType::F32, Device::cuda(0)), NotImplementedError,
                         Catch::Message("not implemented: stub::allocate"));
  // A tensor that claims CUDA memory (host memory here) reaches the stub through the frontend.
  auto storage = std::make_shared<Storage>(cpu.data_ptr(), cpu.nbytes(), Device::cuda(0), nullptr);
  const Tensor fake(storage, {2, 2}, {2, 1}, 0, DType::F32);
  REQUIRE_THROWS_MATCHES(matmul(fake, fake), NotImplementedError,
                         Catch::Message("not implemented: stub::allocate"));
  REQUIRE_THROWS_MATCHES(fake.clone(), NotImplementedError,
                         Catch::Message("not implemented: stub::allocate"));
  Tensor writable = fake;
  REQUIRE_THROWS_MATCHES(writable.fill_(1), NotImplementedError,
                         Catch::Message("not implemented: stub::fill"));
  const bool had_cuda = registration->previous != nullptr;
  registration.reset();
  REQUIRE(&backend_for(Device::cpu()) != &stub);
  if (!had_cuda) REQUIRE_THROWS_AS(backend_for(Device::cuda(0)), DeviceError);
  REQUIRE(has_backend(DeviceType::CUDA) == cuda_before);
}
