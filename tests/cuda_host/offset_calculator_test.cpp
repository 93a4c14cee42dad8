// The CUDA kernels' index arithmetic (cuda/kernels/offset_calculator.h), checked on the host
// against a naive walk of the same views.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "cuda/kernels/offset_calculator.h"
#include "cuda/kernels/tensor_ref.h"

using namespace ruccl;
using namespace ruccl::cuda;

namespace {

TensorRef make_ref(std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides,
                   DType dtype = DType::F32) {
  TensorRef r;
  r.dtype = dtype;
  r.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < r.ndim; ++d) {
    r.sizes[d] = sizes[static_cast<std::size_t>(d)];
    r.strides[d] = strides[static_cast<std::size_t>(d)];
  }
  return r;
}

/// Byte offset of row-major element `linear` of ref, computed the slow way.
std::int64_t naive_offset(const TensorRef& r, std::int64_t linear) {
  std::int64_t off = 0;
  for (int d = r.ndim - 1; d >= 0; --d) {
    off += (linear % r.sizes[d]) * r.strides[d] * static_cast<std::int64_t>(dtype_size(r.dtype));
    linear /= r.sizes[d];
  }
  return off;
}

template <typename Index>
void check_all_offsets(const TensorRef& out, const TensorRef& in) {
  const TensorRef* refs[2] = {&out, &in};
  const Geometry<2> g = geometry_of<2>(refs);
  const OffsetCalculator<2, Index> calc(g);
  REQUIRE(g.numel() == out.numel());
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const auto off = calc.get(static_cast<Index>(i));
    INFO("element " << i);
    REQUIRE(off.v[0] == naive_offset(out, i));
    REQUIRE(off.v[1] == naive_offset(in, i));
  }
}

}  // namespace

TEST_CASE("make_geometry merges a contiguous tensor into one dim of element-size stride",
          "[cuda_host]") {
  const TensorRef a = make_ref({2, 3, 4}, {12, 4, 1});
  const TensorRef* refs[1] = {&a};
  const Geometry<1> g = geometry_of<1>(refs);
  REQUIRE(g.ndim == 1);
  CHECK(g.sizes[0] == 24);
  CHECK(g.strides[0][0] == 4);
  CHECK(is_flat(g, 0, 4));
}

TEST_CASE("make_geometry keeps dims that an operand steps over differently", "[cuda_host]") {
  // out contiguous [4, 5]; in is a transposed view (strides 1, 4) of a [5, 4] buffer.
  const TensorRef out = make_ref({4, 5}, {5, 1});
  const TensorRef in = make_ref({4, 5}, {1, 4});
  const TensorRef* refs[2] = {&out, &in};
  const Geometry<2> g = geometry_of<2>(refs);
  REQUIRE(g.ndim == 2);
  CHECK(g.strides[1][0] == 4);  // bytes
  CHECK(g.strides[1][1] == 16);
  CHECK_FALSE(is_flat(g, 1, 4));
}

TEST_CASE("make_geometry drops size-1 dims and reports an empty tensor as numel 0", "[cuda_host]") {
  const TensorRef a = make_ref({1, 6, 1}, {99, 1, 77});
  const TensorRef* refs[1] = {&a};
  const Geometry<1> g = geometry_of<1>(refs);
  CHECK(g.ndim == 1);
  CHECK(g.sizes[0] == 6);
  const TensorRef e = make_ref({3, 0, 2}, {0, 2, 1});
  const TensorRef* erefs[1] = {&e};
  CHECK(geometry_of<1>(erefs).numel() == 0);
}

TEST_CASE("OffsetCalculator matches a naive walk for transposed and broadcast views",
          "[cuda_host]") {
  // out [3, 4, 5] contiguous; in a permuted view of a [5, 3, 4] buffer.
  const TensorRef out = make_ref({3, 4, 5}, {20, 5, 1});
  const TensorRef permuted = make_ref({3, 4, 5}, {4, 1, 12});
  check_all_offsets<std::uint32_t>(out, permuted);
  check_all_offsets<std::int64_t>(out, permuted);
  // A row broadcast over dim 0 (stride 0) and a column broadcast (stride 0 on dim 1).
  const TensorRef out2 = make_ref({6, 7}, {7, 1}, DType::F64);
  check_all_offsets<std::uint32_t>(out2, make_ref({6, 7}, {0, 1}, DType::F64));
  check_all_offsets<std::uint32_t>(out2, make_ref({6, 7}, {1, 0}, DType::F64));
  // A narrowed view with a gap between rows.
  check_all_offsets<std::int64_t>(make_ref({5, 3}, {3, 1}), make_ref({5, 3}, {10, 2}));
}

TEST_CASE("fits_32bit says no once an element count or a byte extent reaches 2^31", "[cuda_host]") {
  const std::int64_t big = std::int64_t{1} << 31;
  const TensorRef small = make_ref({1024, 1024}, {1024, 1});
  const TensorRef* s[1] = {&small};
  CHECK(fits_32bit(geometry_of<1>(s)));
  // 2^29 floats reach byte 2^31 - 4 and fit; one more float reaches byte 2^31.
  const TensorRef fit = make_ref({std::int64_t{1} << 29}, {1});
  const TensorRef* f[1] = {&fit};
  CHECK(fits_32bit(geometry_of<1>(f)));
  const TensorRef wide = make_ref({(std::int64_t{1} << 29) + 1}, {1});
  const TensorRef* w[1] = {&wide};
  CHECK_FALSE(fits_32bit(geometry_of<1>(w)));
  // 2^31 - 1 one-byte elements fit; 2^31 do not.
  const TensorRef edge = make_ref({big - 1}, {1}, DType::Bool);
  const TensorRef* e[1] = {&edge};
  CHECK(fits_32bit(geometry_of<1>(e)));
  const TensorRef over = make_ref({big}, {1}, DType::Bool);
  const TensorRef* o[1] = {&over};
  CHECK_FALSE(fits_32bit(geometry_of<1>(o)));
  // A broadcast view reaches little memory: 2^30 elements within a 4 KiB extent fit, 2^31 do not.
  const TensorRef bcast = make_ref({1 << 20, 1 << 10}, {0, 1});
  const TensorRef* b[1] = {&bcast};
  CHECK(fits_32bit(geometry_of<1>(b)));
  const TensorRef bcast2 = make_ref({1 << 21, 1 << 10}, {0, 1});
  const TensorRef* b2[1] = {&bcast2};
  CHECK_FALSE(fits_32bit(geometry_of<1>(b2)));
}

TEST_CASE("grid_blocks covers n and stops at the cap; vector_width follows alignment",
          "[cuda_host]") {
  CHECK(grid_blocks(0, 256, 100) == 0);
  CHECK(grid_blocks(1, 256, 100) == 1);
  CHECK(grid_blocks(256, 256, 100) == 1);
  CHECK(grid_blocks(257, 256, 100) == 2);
  CHECK(grid_blocks(std::int64_t{1} << 40, 256, 100) == 100);
  alignas(16) float buf[8];
  const void* aligned[2] = {buf, buf + 4};
  CHECK(vector_width(4, aligned, 2) == 4);
  const void* off_by_one[2] = {buf, buf + 1};
  CHECK(vector_width(4, off_by_one, 2) == 1);
  const void* off_by_two[1] = {buf + 2};
  CHECK(vector_width(4, off_by_two, 1) == 2);
  CHECK(vector_width(8, aligned, 2) == 2);
}
