// The Backend seam's execution model and the calls a device backend needs: streams and events
// (the CPU's one synchronous stream), byte copies, the scalar operand, index bounds checked inside
// the backend, the Storage deleter's context, and ops on a non-CPU device staying on it (through
// tests/support/host_device_backend.h, a stand-in device).
#include <catch2/catch.hpp>

#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/reduce.h"
#include "tests/support/host_device_backend.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

TEST_CASE("the CPU has one synchronous stream whose events are always ready", "[tensor]") {
  Backend& cpu = backend_for(Device::cpu());
  const Stream s = cpu.current_stream(Device::cpu());
  REQUIRE(s == Stream{Device::cpu(), 0});
  REQUIRE(cpu.create_stream(Device::cpu()) == s);
  cpu.set_current_stream(s);
  cpu.synchronize(Device::cpu());
  const auto event = cpu.record_event(s);
  REQUIRE(event->ready());
  event->synchronize();
  event->block(s);
  REQUIRE_THROWS_MATCHES(cpu.set_current_stream(Stream{Device::cpu(), 7}), ValueError,
                         Catch::Message("set_current_stream: expected the CPU's only stream "
                                        "(handle 0), got handle 7"));
  REQUIRE_THROWS_MATCHES(event->block(Stream{Device::cuda(0), 0}), DeviceError,
                         Catch::Message("Event::block: expected a stream of the CPU, got one of "
                                        "cuda:0 (a CPU event orders only CPU work)"));
}

TEST_CASE("copy_bytes copies a byte range between two storages at their offsets", "[tensor]") {
  Backend& cpu = backend_for(Device::cpu());
  const Tensor src = Tensor::arange(0, 8, 1, DType::F32);
  const Tensor dst = Tensor::zeros({8});
  cpu.copy_bytes(*src.storage(), 2 * sizeof(float), *dst.storage(), 4 * sizeof(float),
                 3 * sizeof(float));
  REQUIRE_THAT(dst, TensorEqual(Tensor::from_vector<float>({0, 0, 0, 0, 2, 3, 4, 0}, {8})));
}

TEST_CASE("a scalar operand on either side of a binary op gives torch's values and dtypes",
          "[tensor]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 4}, {3});
  REQUIRE_THAT(10 - x, TensorEqual(Tensor::from_vector<float>({9, 8, 6}, {3})));
  REQUIRE_THAT(x - 10, TensorEqual(Tensor::from_vector<float>({-9, -8, -6}, {3})));
  REQUIRE_THAT(8 / x, TensorEqual(Tensor::from_vector<float>({8, 4, 2}, {3})));
  REQUIRE_THAT(pow(x, 2), TensorEqual(Tensor::from_vector<float>({1, 4, 16}, {3})));
  REQUIRE_THAT(gt(x, 1.5), TensorEqual(Tensor::from_vector<bool>({false, true, true}, {3})));
  // An integer tensor with a fractional scalar is F32; a Bool one with an integer is I64.
  const Tensor n = Tensor::from_vector<std::int32_t>({1, 2}, {2});
  REQUIRE_THAT(n + 0.5, TensorEqual(Tensor::from_vector<float>({1.5F, 2.5F}, {2})));
  REQUIRE_THAT(n * 3, TensorEqual(Tensor::from_vector<std::int32_t>({3, 6}, {2})));
  const Tensor b = Tensor::from_vector<bool>({true, false}, {2});
  REQUIRE_THAT(b + 2, TensorEqual(Tensor::from_vector<std::int64_t>({3, 2}, {2})));
  // An I64 scalar beyond 2^53 stays exact.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  REQUIRE(add(Tensor::from_vector<std::int64_t>({0}, {1}), big).item<std::int64_t>() == big);
  REQUIRE_THROWS_AS(div(n, 2), DTypeError);  // div wants a floating operand
}

TEST_CASE("the backend checks index bounds itself with the frontend's wording", "[tensor]") {
  Backend& cpu = backend_for(Device::cpu());
  const Tensor x = Tensor::arange(0, 6, 1, DType::F32).reshape({2, 3});
  const Tensor index = Tensor::from_vector<std::int64_t>({0, 3}, {1, 2});
  const Tensor out = Tensor::empty({1, 2});
  REQUIRE_THROWS_MATCHES(cpu.gather(x, 1, index, out), IndexError,
                         Catch::Message("gather: expected every index in [0, 3) for dim 1 of "
                                        "shape [2, 3], got 3 at position [0, 1]"));
  const Tensor classes = Tensor::empty({2, 4}, DType::I64);
  REQUIRE_THROWS_MATCHES(cpu.one_hot(Tensor::from_vector<std::int32_t>({1, -1}, {2}), classes),
                         IndexError,
                         Catch::Message("one_hot: expected every index in [0, 4), got -1 at "
                                        "position [1]"));
  // The frontend reaches the same check (no host pre-check of its own).
  REQUIRE_THROWS_MATCHES(one_hot(Tensor::from_vector<std::int64_t>({5}, {1}), 4), IndexError,
                         Catch::Message("one_hot: expected every index in [0, 4), got 5 at "
                                        "position [0]"));
}

TEST_CASE("a storage's deleter receives the context its allocator gave", "[tensor]") {
  struct Pool {
    int returned = 0;
    void* last = nullptr;
  } pool;
  alignas(8) static char block[16];
  {
    Storage s(
        block, sizeof(block), Device::cpu(),
        [](void* data, void* context) {
          auto* p = static_cast<Pool*>(context);
          ++p->returned;
          p->last = data;
        },
        &pool);
    REQUIRE(s.context() == &pool);
  }
  REQUIRE(pool.returned == 1);
  REQUIRE(pool.last == block);
}

TEST_CASE("ops on a device tensor run on its backend without a trip through the host", "[tensor]") {
  testing::HostDeviceBackend device;
  testing::BackendRegistration registration(DeviceType::CUDA, &device);
  const Tensor x = Tensor::from_vector<float>({1, -2, 3, 4}, {2, 2}).to(Device::cuda(0));
  const Tensor index = Tensor::from_vector<std::int64_t>({1, 0}, {2}).to(Device::cuda(0));
  REQUIRE(device.from_host == 2);
  // Scalar operands, index ops (their bounds checked by the backend) and reductions: no copies.
  const Tensor y = sum(relu(index_select(x * 2 + 1, 0, index)), {1});
  const Tensor moved = x.to(Device::cuda(1));  // between two devices: the backend's peer copy
  REQUIRE(device.to_host == 0);
  REQUIRE(device.from_host == 2);
  REQUIRE(moved.device() == Device::cuda(1));
  REQUIRE_THAT(y.to(Device::cpu()), TensorEqual(Tensor::from_vector<float>({16, 3}, {2})));
  REQUIRE_THAT(moved.to(Device::cpu()), TensorEqual(x.to(Device::cpu())));
  const Tensor bad = Tensor::from_vector<std::int64_t>({2}, {1}).to(Device::cuda(0));
  REQUIRE_THROWS_MATCHES(index_select(x, 0, bad), IndexError,
                         Catch::Message("index_select: expected every index in [0, 2) for dim 0 "
                                        "of shape [2, 2], got 2 at position [0]"));
}
