// The TensorRef limit (cuda::kMaxDims fixed arrays) against the tensors that can exist: no tensor
// has more dims than a TensorRef holds, and one of the most dims converts whole. CPU tensors stand
// in for device ones (ref() reads only the address, dtype, sizes and strides).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "cuda/backend/tensor_refs.h"
#include "tensor/tensor.h"

using namespace ruccl;

TEST_CASE("a tensor of more dims than the CUDA kernels take cannot be built: ShapeError",
          "[cuda_host][tensor_refs]") {
  const std::vector<std::int64_t> nine(cuda::kMaxDims + 1, 1);
  CHECK_THROWS_AS(Tensor::zeros(Shape(nine)), ShapeError);
  CHECK_THROWS_WITH(Tensor::zeros(Shape(nine)),
                    Catch::Contains("expected at most 8 dimensions, got 9"));
  Shape eight(std::vector<std::int64_t>(cuda::kMaxDims, 1));
  CHECK_THROWS_AS(eight.push_back(1), ShapeError);
}

TEST_CASE("a view of the most dims a Shape holds converts to a TensorRef whole",
          "[cuda_host][tensor_refs]") {
  const Tensor t = Tensor::zeros(Shape{2, 3, 1, 2, 2, 1, 3, 2}).transpose(0, 7);
  REQUIRE(t.dim() == cuda::kMaxDims);
  const cuda::TensorRef r = cuda::ref(t);
  CHECK(r.ndim == 8);
  CHECK(r.data == t.data_ptr());
  for (int d = 0; d < 8; ++d) {
    CHECK(r.sizes[d] == t.shape()[d]);
    CHECK(r.strides[d] == t.strides()[d]);
  }
}
