// copy (same dtype: moved as raw bits of the element's width; different dtypes: converted as the
// CPU backend's copy converts) and fill.
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

namespace {

struct IdentityFn {
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const {
    return x;
  }
};

/// Unsigned integer of `Size` bytes, to move elements of any dtype.
template <std::size_t Size>
using Bits = std::conditional_t<
    Size == 1, std::uint8_t,
    std::conditional_t<Size == 2, std::uint16_t,
                       std::conditional_t<Size == 4, std::uint32_t, std::uint64_t>>>;

template <typename T>
void copy_bits(const TensorRef& src, const TensorRef& dst, cudaStream_t stream) {
  launch_elementwise<T, T>(IdentityFn{}, dst, src, nullptr, nullptr, stream);
}

/// To's value of a From compute value (From's compute type, then To's conversion).
template <typename To>
struct ConvertFn {
  template <typename C>
  __device__ __forceinline__ To operator()(C x) const {
    return from_compute<To>(x);
  }
};

template <typename T, int V>
__global__ void __launch_bounds__(kElementwiseThreads)
    fill_flat_kernel(T* __restrict__ out, std::int64_t n, T value) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Aligned<T, V> v;
#pragma unroll
  for (int j = 0; j < V; ++j) v.v[j] = value;
  const std::int64_t vectors = n / V;
  for (std::int64_t i = first; i < vectors; i += stride) {
    reinterpret_cast<Aligned<T, V>*>(out)[i] = v;
  }
  for (std::int64_t i = vectors * V + first; i < n; i += stride) out[i] = value;
}

template <typename T, typename Index>
__global__ void __launch_bounds__(kElementwiseThreads)
    fill_strided_kernel(char* out, Index n, OffsetCalculator<1, Index> calc, T value) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    *reinterpret_cast<T*>(out + calc.get(i).v[0]) = value;
  }
}

template <typename T>
void fill_typed(const TensorRef& dst, T value, cudaStream_t stream) {
  const TensorRef* refs[1] = {&dst};
  const Geometry<1> g = geometry_of<1>(refs);
  const std::int64_t n = g.numel();
  if (n == 0) return;
  const int threads = kElementwiseThreads;
  const std::int64_t cap = max_resident_blocks(threads);
  if (is_flat(g, 0, sizeof(T)) &&
      reinterpret_cast<std::uintptr_t>(dst.data) % (kVec * sizeof(T)) == 0) {
    fill_flat_kernel<T, kVec>
        <<<static_cast<unsigned>(grid_blocks((n + kVec - 1) / kVec, threads, cap)), threads, 0,
           stream>>>(static_cast<T*>(dst.data), n, value);
  } else if (fits_32bit(g)) {
    fill_strided_kernel<T, std::uint32_t>
        <<<static_cast<unsigned>(grid_blocks(n, threads, cap)), threads, 0, stream>>>(
            static_cast<char*>(dst.data), static_cast<std::uint32_t>(n),
            OffsetCalculator<1, std::uint32_t>(g), value);
  } else {
    fill_strided_kernel<T, std::int64_t>
        <<<static_cast<unsigned>(grid_blocks(n, threads, cap)), threads, 0, stream>>>(
            static_cast<char*>(dst.data), n, OffsetCalculator<1, std::int64_t>(g), value);
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_copy(const TensorRef& src, const TensorRef& dst, cudaStream_t stream) {
  if (src.dtype == dst.dtype) {
    switch (dtype_size(src.dtype)) {
      case 1:
        return copy_bits<Bits<1>>(src, dst, stream);
      case 2:
        return copy_bits<Bits<2>>(src, dst, stream);
      case 4:
        return copy_bits<Bits<4>>(src, dst, stream);
      default:
        return copy_bits<Bits<8>>(src, dst, stream);
    }
  }
  dispatch<Kinds::kAll>(dst.dtype, [&](auto to_tag) {
    using To = decltype(to_tag);
    dispatch<Kinds::kAll>(src.dtype, [&](auto from_tag) {
      using From = decltype(from_tag);
      if constexpr (!std::is_same_v<To, From>) {
        launch_elementwise<To, From>(ConvertFn<To>{}, dst, src, nullptr, nullptr, stream);
      }
    });
  });
}

void launch_fill(const TensorRef& dst, const ScalarArg& value, cudaStream_t stream) {
  dispatch<Kinds::kAll>(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    // 16-bit floats from the value as float (the CPU's T(value.to<float>())).
    if constexpr (kIsHalfLike<T>) {
      fill_typed<T>(dst, from_compute<T>(value.as<float>()), stream);
    } else {
      fill_typed<T>(dst, value.as<T>(), stream);
    }
  });
}

}  // namespace ruccl::cuda
