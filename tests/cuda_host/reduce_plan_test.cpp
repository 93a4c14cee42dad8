// How the CUDA reductions cut their work (cuda/kernels/reduce_plan.h): which kernel, how many
// splits, and that the choice depends on the shape alone.
#include <catch2/catch.hpp>

#include <vector>

#include "cuda/kernels/reduce_plan.h"

using namespace ruccl;
using namespace ruccl::cuda;

namespace {

TensorRef contiguous(std::vector<std::int64_t> sizes, DType dtype = DType::F32) {
  TensorRef r;
  r.dtype = dtype;
  r.ndim = static_cast<int>(sizes.size());
  std::int64_t stride = 1;
  for (int d = r.ndim - 1; d >= 0; --d) {
    r.sizes[d] = sizes[static_cast<std::size_t>(d)];
    r.strides[d] = stride;
    stride *= r.sizes[d];
  }
  return r;
}

TensorRef reduced_out(const TensorRef& x, const bool* reduced, DType dtype) {
  std::vector<std::int64_t> sizes;
  for (int d = 0; d < x.ndim; ++d) sizes.push_back(reduced[d] ? 1 : x.sizes[d]);
  return contiguous(sizes, dtype);
}

}  // namespace

TEST_CASE("reducing the innermost dim plans one warp per row", "[cuda_host]") {
  const TensorRef x = contiguous({512, 300});
  const bool reduced[2] = {false, true};
  const ReducePlan p = plan_reduce(x, reduced, reduced_out(x, reduced, DType::F64));
  CHECK(p.row);
  CHECK(p.outputs == 512);
  CHECK(p.length == 300);
  CHECK(p.splits == 1);  // 300 elements: less than one minimum chunk
  CHECK(p.kept.strides[0][0] == 300 * 4);
  CHECK(p.kept.strides[1][0] == 8);
}

TEST_CASE("reducing an outer dim plans one thread per output with splits of the column",
          "[cuda_host]") {
  const TensorRef x = contiguous({4096, 64});
  const bool reduced[2] = {true, false};
  const ReducePlan p = plan_reduce(x, reduced, reduced_out(x, reduced, DType::F64));
  CHECK_FALSE(p.row);
  CHECK(p.outputs == 64);
  CHECK(p.length == 4096);
  CHECK(p.splits == 4096 / kMinColumnChunk);  // 2^17 threads wanted; 64-element chunks at least
  CHECK(p.chunk * p.splits >= p.length);
  CHECK(p.chunk * (p.splits - 1) < p.length);  // no empty split
}

TEST_CASE("a full reduction of a large tensor is split into fixed chunks", "[cuda_host]") {
  const TensorRef x = contiguous({std::int64_t{1} << 26});
  const bool reduced[1] = {true};
  const ReducePlan p = plan_reduce(x, reduced, reduced_out(x, reduced, DType::F64));
  CHECK(p.row);
  CHECK(p.outputs == 1);
  CHECK(p.splits == kMaxSplits);
  CHECK(p.chunk == (std::int64_t{1} << 26) / kMaxSplits);
  // The same shape always gives the same plan (results cannot depend on the device or a run).
  const ReducePlan again = plan_reduce(x, reduced, reduced_out(x, reduced, DType::F64));
  CHECK(again.splits == p.splits);
  CHECK(again.chunk == p.chunk);
}

TEST_CASE("reducing the middle dims of a 4-d tensor merges them into one reduced range",
          "[cuda_host]") {
  const TensorRef x = contiguous({3, 4, 5, 6});
  const bool reduced[4] = {false, true, true, false};
  const ReducePlan p = plan_reduce(x, reduced, reduced_out(x, reduced, DType::F32));
  CHECK(p.reduced.ndim == 1);
  CHECK(p.reduced.sizes[0] == 20);
  CHECK(p.reduced.strides[0][0] == 6 * 4);
  CHECK(p.kept.ndim == 2);  // dims 0 and 3 are not adjacent in memory
  CHECK(p.outputs == 18);
  CHECK_FALSE(p.row);  // the kept innermost dim is contiguous, the reduced one is not
}
