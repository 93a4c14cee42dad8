// The CUDA backend is there for any binary linking ruccl::ruccl (this one calls nothing of it),
// and without a GPU every device call fails with DeviceError saying there is none.
#include <catch2/catch.hpp>

#include <string>

#include "cuda/core/device.h"
#include "tensor/backend/backend.h"
#include "tensor/tensor.h"

using namespace ruccl;
using Catch::Matchers::Contains;

TEST_CASE("the CUDA backend is registered with no call from the program", "[cuda_host]") {
  REQUIRE(has_backend(DeviceType::CUDA));
  CHECK(backend_for(Device::cuda(0)).name() == "cuda");
}

TEST_CASE("the CUDA backend supports the same dtypes per op as the CPU backend", "[cuda_host]") {
  const Backend& cpu = backend_for(Device::cpu());
  const Backend& gpu = backend_for(Device::cuda(0));
  for (int o = 0; o < static_cast<int>(Op::kCount); ++o) {
    const auto op = static_cast<Op>(o);
    for (const DType dt :
         {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
      INFO(op_name(op) << " " << dt);
      if (op == Op::OneHot) {  // the indices' dtype: only I32 and I64 are indices
        CHECK(gpu.supports(op, dt) == (dt == DType::I32 || dt == DType::I64));
      } else if (op == Op::Cumsum || op == Op::Sort || op == Op::BatchNorm) {
        // The known gap (docs/cuda.md): no scan or sort kernels yet. The CUDA backend must say so
        // (NotImplementedError) rather than claim them; this line fails once they exist, so that
        // the parity check above takes them over.
        CHECK_FALSE(gpu.supports(op, dt));
      } else {
        CHECK(gpu.supports(op, dt) == cpu.supports(op, dt));
      }
    }
  }
}

TEST_CASE("Tensor::to(cuda) says there is no GPU on a machine without one, and round-trips on one",
          "[cuda_host]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3});
  if (!cuda::cuda_available()) {
    REQUIRE_THROWS_AS(x.to(Device::cuda(0)), DeviceError);
    REQUIRE_THROWS_WITH(x.to(Device::cuda(0)),
                        Contains("expected a CUDA device, got none") && Contains("no CUDA GPU"));
    REQUIRE_THROWS_AS(Tensor::zeros({2}, DType::F32, Device::cuda(0)), DeviceError);
    return;
  }
  const Tensor back = x.to(Device::cuda(0)).to(Device::cpu());
  CHECK(back.to_vector<float>() == std::vector<float>{1, 2, 3});
  REQUIRE_THROWS_AS(x.to(Device::cuda(cuda::device_count())), DeviceError);
  REQUIRE_THROWS_WITH(x.to(Device::cuda(cuda::device_count())),
                      Contains("expected a CUDA device index"));
}

TEST_CASE("without a GPU every CUDA backend entry point that needs a device says there is none",
          "[cuda_host]") {
  if (cuda::cuda_available()) return;  // the GPU suite (tests/cuda) covers these with a device
  Backend& gpu = backend_for(Device::cuda(0));
// (Catch2's combined matchers keep references to their parts: spelled out at each use.)
#define says_no_gpu Contains("expected a CUDA device, got none") && Contains("no CUDA GPU")
  REQUIRE_THROWS_AS(gpu.allocate(64, Device::cuda(0)), DeviceError);
  REQUIRE_THROWS_WITH(gpu.allocate(64, Device::cuda(0)), says_no_gpu);
  REQUIRE_THROWS_WITH(gpu.current_stream(Device::cuda(0)), says_no_gpu);
  REQUIRE_THROWS_WITH(gpu.create_stream(Device::cuda(0)), says_no_gpu);
  REQUIRE_THROWS_WITH(gpu.synchronize(Device::cuda(0)), says_no_gpu);
  REQUIRE_THROWS_WITH(gpu.record_event(Stream{Device::cuda(0), 0}), says_no_gpu);
  REQUIRE_THROWS_WITH(gpu.set_current_stream(Stream{Device::cuda(0), 0}), says_no_gpu);
  // Answering what it supports needs no device.
  CHECK(gpu.supports(Op::Matmul, DType::BF16));
  CHECK_FALSE(gpu.supports(Op::Matmul, DType::I32));
#undef says_no_gpu
}
