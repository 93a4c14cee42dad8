// CudaBackend's argument contract, checked before any device work: tensors on a CUDA device are
// stood in by storage that is never dereferenced (the calls refuse before touching it), so the
// checks run without a GPU.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "cuda/backend/cuda_backend.h"
#include "tensor/tensor.h"

using namespace ruccl;

namespace {

/// A contiguous F32 tensor of `shape` on cuda:0 whose storage is a dangling address no call
/// reads.
Tensor fake_cuda(const Shape& shape) {
  static float cell = 0;
  auto storage = std::make_shared<Storage>(&cell, static_cast<std::size_t>(shape.numel()) * 4,
                                           Device::cuda(0), nullptr);
  return Tensor(storage, shape, shape.contiguous_strides("fake_cuda", 4), 0, DType::F32);
}

}  // namespace

TEST_CASE("CudaBackend max and min of an empty input over a non-empty output are refused",
          "[cuda_host][reduce]") {
  const Tensor x = fake_cuda(Shape{0, 3});
  const Tensor out = fake_cuda(Shape{1, 3});
  const std::int64_t dims[] = {0};
  for (const Op op : {Op::Max, Op::Min}) {
    try {
      cuda::backend().reduce(op, x, dims, out);
      FAIL("reduce of an empty input did not throw");
    } catch (const InternalError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK_THAT(what, Catch::Contains("of an empty input [0, 3] into [1, 3]"));
    }
  }
}

TEST_CASE("the frontend refuses max and min over an empty dim with IndexError",
          "[cuda_host][reduce]") {
  // What the backend's assertion relies on (the CPU and CUDA backends alike).
  const Tensor x = Tensor::zeros(Shape{0, 3});
  CHECK_THROWS_WITH(max(x, 0), Catch::Contains("max: expected a non-empty dim to reduce"));
  CHECK_THROWS_AS(min(x, 0), IndexError);
  CHECK_THROWS_AS(max(x), IndexError);
}
