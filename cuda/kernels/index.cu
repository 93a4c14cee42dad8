// Index ops with device-side bounds checks: an index outside [0, bound) is not used; the first
// such position (in row-major order of the index tensor) is recorded with atomicMin into
// *first_bad (a uint64 preset to UINT64_MAX by the caller), which the backend reads after the
// kernel to raise IndexError.
//   gather / index_select: one thread per output element (out[p] = x[p with dim := index]);
//   scatter_add / index_add: one thread per line (every coordinate but dim fixed), adding its
//     src elements in index order: no two threads touch one output element, so the sums are
//     exact sequential folds in the CPU backend's order, without atomics;
//   one_hot: one thread per index.
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/index_kernels.h"

namespace ruccl::cuda {

namespace {

constexpr int kThreads = 256;

template <std::size_t Size>
using Bits = std::conditional_t<
    Size == 1, std::uint8_t,
    std::conditional_t<Size == 2, std::uint16_t,
                       std::conditional_t<Size == 4, std::uint32_t, std::uint64_t>>>;

__device__ __forceinline__ void record_bad(unsigned long long* first_bad, std::int64_t position) {
  atomicMin(first_bad, static_cast<unsigned long long>(position));
}

template <typename E, typename I, typename Index>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(char* out, const char* x, const char* index, OffsetCalculator<3, Index> calc,
                  Index n, std::int64_t step, std::int64_t bound, std::int64_t pos_inner,
                  std::int64_t pos_size, unsigned long long* first_bad) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const auto off = calc.get(i);
    const auto v = static_cast<std::int64_t>(*reinterpret_cast<const I*>(index + off.v[2]));
    if (v < 0 || v >= bound) {
      // Position in the index tensor: i itself (gather), or i's coordinate along dim
      // (index_select: pos_inner = elements after dim, pos_size = its size).
      const std::int64_t position =
          pos_size > 0 ? (static_cast<std::int64_t>(i) / pos_inner) % pos_size : i;
      record_bad(first_bad, position);
      continue;
    }
    *reinterpret_cast<E*>(out + off.v[0]) = *reinterpret_cast<const E*>(x + off.v[1] + v * step);
  }
}

template <typename T>
__device__ __forceinline__ T add_elem(T a, T b) {
  return from_compute<T>(wrap_add(to_compute(a), to_compute(b)));
}

template <typename T, typename I, typename Index>
__global__ void __launch_bounds__(kThreads)
    scatter_kernel(char* out, const char* src, const char* index, OffsetCalculator<3, Index> calc,
                   Index lines, std::int64_t n, std::int64_t out_step, std::int64_t src_step,
                   std::int64_t index_step, std::int64_t bound, std::int64_t inner, bool index_1d,
                   unsigned long long* first_bad) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index l = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; l < lines;
       l += stride) {
    const auto off = calc.get(l);
    char* o = out + off.v[0];
    const char* s = src + off.v[1];
    const char* ix = index + off.v[2];
    const std::int64_t outer = static_cast<std::int64_t>(l) / inner;
    const std::int64_t in = static_cast<std::int64_t>(l) - outer * inner;
    for (std::int64_t j = 0; j < n; ++j) {
      const auto v = static_cast<std::int64_t>(*reinterpret_cast<const I*>(ix + j * index_step));
      if (v < 0 || v >= bound) {
        record_bad(first_bad, index_1d ? j : (outer * n + j) * inner + in);
        continue;
      }
      T* dst = reinterpret_cast<T*>(o + v * out_step);
      *dst = add_elem(*dst, *reinterpret_cast<const T*>(s + j * src_step));
    }
  }
}

template <typename I>
__global__ void __launch_bounds__(kThreads)
    one_hot_kernel(std::int64_t* out, const I* indices, std::int64_t n, std::int64_t classes,
                   unsigned long long* first_bad) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const auto v = static_cast<std::int64_t>(indices[i]);
    if (v < 0 || v >= classes) {
      record_bad(first_bad, i);
      continue;
    }
    out[i * classes + v] = 1;
  }
}

template <typename Fn>
void by_index_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::I32) {
    fn(std::int32_t{});
  } else {
    RUCCL_ASSERT(dtype == DType::I64, "index dtype ", dtype, " passed the frontend");
    fn(std::int64_t{});
  }
}

template <typename E>
void gather_elems(const GatherArgs& a, cudaStream_t stream) {
  const TensorRef* refs[3] = {&a.out, &a.x, &a.index};
  const Geometry<3> g = geometry_of<3>(refs);
  const std::int64_t n = g.numel();
  if (n == 0) return;
  const auto blocks =
      static_cast<unsigned>(grid_blocks(n, kThreads, max_resident_blocks(kThreads)));
  by_index_dtype(a.index.dtype, [&](auto tag) {
    using I = decltype(tag);
    auto* o = static_cast<char*>(a.out.data);
    const auto* x = static_cast<const char*>(a.x.data);
    const auto* ix = static_cast<const char*>(a.index.data);
    if (fits_32bit(g)) {
      gather_kernel<E, I, std::uint32_t><<<blocks, kThreads, 0, stream>>>(
          o, x, ix, OffsetCalculator<3, std::uint32_t>(g), static_cast<std::uint32_t>(n), a.step,
          a.bound, a.pos_inner, a.pos_size, a.first_bad);
    } else {
      gather_kernel<E, I, std::int64_t>
          <<<blocks, kThreads, 0, stream>>>(o, x, ix, OffsetCalculator<3, std::int64_t>(g), n,
                                            a.step, a.bound, a.pos_inner, a.pos_size, a.first_bad);
    }
  });
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_gather(const GatherArgs& args, cudaStream_t stream) {
  switch (dtype_size(args.out.dtype)) {
    case 1:
      return gather_elems<Bits<1>>(args, stream);
    case 2:
      return gather_elems<Bits<2>>(args, stream);
    case 4:
      return gather_elems<Bits<4>>(args, stream);
    default:
      return gather_elems<Bits<8>>(args, stream);
  }
}

void launch_scatter_add(const ScatterArgs& a, cudaStream_t stream) {
  const TensorRef* refs[3] = {&a.out, &a.src, &a.index};
  const Geometry<3> g = geometry_of<3>(refs);
  const std::int64_t lines = g.numel();
  if (lines == 0 || a.n == 0) return;
  const auto blocks =
      static_cast<unsigned>(grid_blocks(lines, kThreads, max_resident_blocks(kThreads)));
  const bool done = dispatch<Kinds::kNumeric>(a.src.dtype, [&](auto tag) {
    using T = decltype(tag);
    by_index_dtype(a.index.dtype, [&](auto index_tag) {
      using I = decltype(index_tag);
      auto* o = static_cast<char*>(a.out.data);
      const auto* s = static_cast<const char*>(a.src.data);
      const auto* ix = static_cast<const char*>(a.index.data);
      if (fits_32bit(g)) {
        scatter_kernel<T, I, std::uint32_t><<<blocks, kThreads, 0, stream>>>(
            o, s, ix, OffsetCalculator<3, std::uint32_t>(g), static_cast<std::uint32_t>(lines), a.n,
            a.out_step, a.src_step, a.index_step, a.bound, a.inner, a.index_1d, a.first_bad);
      } else {
        scatter_kernel<T, I, std::int64_t><<<blocks, kThreads, 0, stream>>>(
            o, s, ix, OffsetCalculator<3, std::int64_t>(g), lines, a.n, a.out_step, a.src_step,
            a.index_step, a.bound, a.inner, a.index_1d, a.first_bad);
      }
    });
  });
  RUCCL_ASSERT(done, "cuda::scatter for dtype ", a.src.dtype);
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

void launch_one_hot(const TensorRef& indices, std::int64_t classes, const TensorRef& out,
                    unsigned long long* first_bad, cudaStream_t stream) {
  const std::int64_t n = indices.numel();
  if (n == 0) return;
  const auto blocks =
      static_cast<unsigned>(grid_blocks(n, kThreads, max_resident_blocks(kThreads)));
  by_index_dtype(indices.dtype, [&](auto tag) {
    using I = decltype(tag);
    one_hot_kernel<I><<<blocks, kThreads, 0, stream>>>(static_cast<std::int64_t*>(out.data),
                                                       static_cast<const I*>(indices.data), n,
                                                       classes, first_bad);
  });
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ruccl::cuda
