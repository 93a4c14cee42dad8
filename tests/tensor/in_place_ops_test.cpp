// Tensor::add_, sub_, mul_, div_ with a scalar: the out-of-place op's values written into the
// tensor's own memory (views write through), in every dtype that can hold the result; refusals
// name the op and say what was expected; the stub and a device backend serve them like any op.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "tensor/backend/backend.h"
#include "tensor/backend/stub/stub_backend.h"
#include "tensor/tensor.h"
#include "tests/support/host_device_backend.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using Catch::Contains;
using ruccl::testing::TensorEqual;

namespace {

/// The four in-place ops and their out-of-place twins.
struct InPlaceCase {
  const char* name;
  Tensor& (Tensor::*in_place)(Scalar);
  Tensor (*out_of_place)(const Tensor&, Scalar);
};

const InPlaceCase kCases[] = {
    {"add_", &Tensor::add_, [](const Tensor& t, Scalar s) { return add(t, s); }},
    {"sub_", &Tensor::sub_, [](const Tensor& t, Scalar s) { return sub(t, s); }},
    {"mul_", &Tensor::mul_, [](const Tensor& t, Scalar s) { return mul(t, s); }},
    {"div_", &Tensor::div_, [](const Tensor& t, Scalar s) { return div(t, s); }},
};

}  // namespace

TEST_CASE("in-place scalar ops give the out-of-place values bit for bit in every float dtype",
          "[tensor]") {
  Generator gen(5);
  for (const DType dtype : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    // 1000 elements (a flat run with a tail) and 70000 (split across threads).
    for (const std::int64_t n : {std::int64_t{1000}, std::int64_t{70000}}) {
      const Tensor x = Tensor::randn({n}, gen, DType::F64).to(dtype);
      for (const InPlaceCase& c : kCases) {
        for (const double s : {0.1, -3.0, 1.0 / 3.0}) {
          INFO(c.name << " " << dtype << " n " << n << " s " << s);
          Tensor t = x.clone();
          const void* before = t.data_ptr();
          Tensor& returned = (t.*c.in_place)(s);
          CHECK(&returned == &t);
          CHECK(t.data_ptr() == before);  // no new storage
          CHECK(t.dtype() == dtype);
          CHECK_THAT(t, TensorEqual(c.out_of_place(x, s)));
        }
      }
    }
  }
}

TEST_CASE("in-place add_ sub_ mul_ on integers keep the dtype and wrap like the out-of-place ops",
          "[tensor]") {
  const Tensor i32 =
      Tensor::from_vector<std::int32_t>({0, 1, -7, std::numeric_limits<std::int32_t>::max(),
                                         std::numeric_limits<std::int32_t>::min()});
  const Tensor i64 =
      Tensor::from_vector<std::int64_t>({0, 5, -9, std::numeric_limits<std::int64_t>::max(),
                                         std::numeric_limits<std::int64_t>::min()});
  for (const Tensor& x : {i32, i64}) {
    for (const InPlaceCase& c : {kCases[0], kCases[1], kCases[2]}) {
      INFO(c.name << " " << x.dtype());
      Tensor t = x.clone();
      (t.*c.in_place)(3);
      CHECK(t.dtype() == x.dtype());
      CHECK_THAT(t, TensorEqual(c.out_of_place(x, 3)));
    }
  }
  Tensor t = Tensor::from_vector<std::int64_t>({1, 2, 3});
  t.mul_(4).add_(1).sub_(2);
  CHECK(t.to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 7, 11});
}

TEST_CASE("an in-place op on a view writes through to the tensor it views", "[tensor]") {
  SECTION("a narrowed row range") {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
    x.narrow(0, 1, 2).mul_(10);
    CHECK(x.to_vector<float>() == std::vector<float>{1, 2, 30, 40, 50, 60});
  }
  SECTION("a column (non-contiguous)") {
    Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2});
    x.select(1, 1).add_(0.5);
    CHECK(x.to_vector<double>() == std::vector<double>{1, 2.5, 3, 4.5, 5, 6.5});
  }
  SECTION("a transposed view") {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor t = x.transpose(0, 1);
    t.div_(2);
    CHECK(x.to_vector<float>() == std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3});
  }
  SECTION("every other element of a large tensor (threads over a strided view)") {
    const std::int64_t n = 300000;
    Tensor x = Tensor::ones({n}, DType::F32);
    using namespace ruccl::indexing;
    x.index({Slice(1, None, 2)}).sub_(1);
    const std::vector<float> v = x.to_vector<float>();
    bool ok = true;
    for (std::int64_t i = 0; i < n; ++i)
      ok = ok && v[static_cast<std::size_t>(i)] == static_cast<float>(1 - i % 2);
    CHECK(ok);
  }
  SECTION("an empty view is left alone") {
    Tensor x = Tensor::ones({3});
    x.narrow(0, 1, 0).mul_(7);
    CHECK(x.to_vector<float>() == std::vector<float>{1, 1, 1});
  }
}

TEST_CASE("in-place scalar ops refuse what would change the dtype or write an element twice",
          "[tensor]") {
  Tensor b = Tensor::from_vector<bool>({true, false});
  REQUIRE_THROWS_AS(b.add_(1), DTypeError);
  REQUIRE_THROWS_WITH(b.add_(1),
                      Contains("Tensor::add_: expected numeric operands") && Contains("got Bool"));
  Tensor i = Tensor::from_vector<std::int64_t>({1, 2});
  REQUIRE_THROWS_AS(i.mul_(0.5), DTypeError);
  REQUIRE_THROWS_WITH(i.mul_(0.5),
                      Contains("Tensor::mul_: expected an integral scalar for an in-place op on "
                               "a I64 tensor, got 0.5"));
  REQUIRE_THROWS_AS(i.div_(2), DTypeError);
  REQUIRE_THROWS_WITH(i.div_(2),
                      Contains("Tensor::div_: expected a floating dtype") && Contains("got I64"));
  CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2});  // untouched

  Tensor expanded = Tensor::ones({1, 3}).expand({4, 3});
  REQUIRE_THROWS_AS(expanded.mul_(2), ValueError);
  REQUIRE_THROWS_WITH(expanded.mul_(2),
                      Contains("Tensor::mul_: expected a tensor whose elements do not share "
                               "memory, got shape [4, 3]"));
  Tensor undefined;
  REQUIRE_THROWS_AS(undefined.add_(1), ValueError);
  REQUIRE_THROWS_WITH(undefined.add_(1), Contains("Tensor::add_: expected a defined tensor"));
}

TEST_CASE("backends answer supports() for the in-place ops and the stub names them", "[tensor]") {
  const Backend& cpu = backend_for(Device::cpu());
  for (const Op op : {Op::AddInPlace, Op::SubInPlace, Op::MulInPlace}) {
    INFO(op_name(op));
    CHECK(cpu.supports(op, DType::F32));
    CHECK(cpu.supports(op, DType::I32));
    CHECK_FALSE(cpu.supports(op, DType::Bool));
  }
  CHECK(cpu.supports(Op::DivInPlace, DType::BF16));
  CHECK_FALSE(cpu.supports(Op::DivInPlace, DType::I64));
  CHECK(op_name(Op::MulInPlace) == "mul_");

  StubBackend stub;
  Tensor x = Tensor::ones({2});
  REQUIRE_THROWS_MATCHES(stub.scalar_in_place(Op::MulInPlace, x, 2), NotImplementedError,
                         Catch::Message("not implemented: stub::mul_"));
  REQUIRE_THROWS_MATCHES(stub.scalar_in_place(Op::DivInPlace, x, 2), NotImplementedError,
                         Catch::Message("not implemented: stub::div_"));
}

TEST_CASE("an in-place op on a device tensor runs on its backend with no trip to the host",
          "[tensor]") {
  testing::HostDeviceBackend device;
  testing::BackendRegistration registration(DeviceType::CUDA, &device);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}).to(Device::cuda(0));
  REQUIRE(device.from_host == 1);
  x.mul_(3).add_(1).narrow(0, 2, 2).div_(2);
  REQUIRE(device.to_host == 0);
  REQUIRE(device.from_host == 1);
  CHECK(x.to(Device::cpu()).to_vector<float>() == std::vector<float>{4, 7, 5, 6.5f});
}
