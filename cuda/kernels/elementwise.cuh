#pragma once
// The elementwise engine of the CUDA backend (included by the per-family .cu files only).
//
// launch_elementwise<Out, A[, B[, C]]>(fn, out, a[, b[, c]], stream) computes out = fn(a, b, c)
// elementwise over operands of out's shape (broadcast inputs have stride 0). Paths, chosen on the
// host:
//   - every operand dense and aligned to kVec elements: a vectorised grid-stride loop, kVec
//     elements per thread and iteration through one aligned vector load/store per operand (the
//     n % kVec tail by the first threads);
//   - otherwise the merged geometry (offset_calculator.h) walked by a grid-stride loop, with 32-bit
//     index math when it fits.
// fn is a functor on compute values (device_types.cuh): fn(Compute<A>, ...) gives Out's value.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/check.h"
#include "cuda/kernels/device_types.cuh"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/tensor_ref.h"

namespace ruccl::cuda {

constexpr int kElementwiseThreads = 256;
constexpr int kVec = 4;

template <typename T, int V>
struct alignas(sizeof(T) * V) Aligned {
  T v[V];
};

/// Unused operand slot.
struct NoInput {};

template <typename T>
constexpr int kInputs = std::is_same_v<T, NoInput> ? 0 : 1;

template <typename F, typename A, typename B, typename C>
__device__ __forceinline__ auto apply_fn(const F& fn, const A& a, const B& b, const C& c) {
  if constexpr (std::is_same_v<B, NoInput>) {
    return fn(to_compute(a));
  } else if constexpr (std::is_same_v<C, NoInput>) {
    return fn(to_compute(a), to_compute(b));
  } else {
    return fn(to_compute(a), to_compute(b), to_compute(c));
  }
}

template <typename T>
using Ptr = std::conditional_t<std::is_same_v<T, NoInput>, const void*, const T*>;

template <typename T>
__device__ __forceinline__ Aligned<T, kVec> load_vec(Ptr<T> p, std::int64_t i) {
  if constexpr (std::is_same_v<T, NoInput>) {
    return {};
  } else {
    return reinterpret_cast<const Aligned<T, kVec>*>(p)[i];
  }
}

template <typename Out, typename A, typename B, typename C, typename F>
__global__ void __launch_bounds__(kElementwiseThreads)
    vectorized_kernel(std::int64_t n, F fn, Out* __restrict__ out, Ptr<A> __restrict__ a,
                      Ptr<B> __restrict__ b, Ptr<C> __restrict__ c) {
  const std::int64_t vectors = n / kVec;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t i = first; i < vectors; i += stride) {
    const auto va = load_vec<A>(a, i);
    const auto vb = load_vec<B>(b, i);
    const auto vc = load_vec<C>(c, i);
    Aligned<Out, kVec> o;
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      o.v[j] = from_compute<Out>(apply_fn(fn, va.v[j], vb.v[j], vc.v[j]));
    reinterpret_cast<Aligned<Out, kVec>*>(out)[i] = o;
  }
  for (std::int64_t i = vectors * kVec + first; i < n; i += stride) {
    NoInput none;
    if constexpr (std::is_same_v<B, NoInput>) {
      out[i] = from_compute<Out>(apply_fn(fn, a[i], none, none));
    } else if constexpr (std::is_same_v<C, NoInput>) {
      out[i] = from_compute<Out>(apply_fn(fn, a[i], b[i], none));
    } else {
      out[i] = from_compute<Out>(apply_fn(fn, a[i], b[i], c[i]));
    }
  }
}

template <typename T>
__device__ __forceinline__ auto load_at(const char* base, std::int64_t off) {
  if constexpr (std::is_same_v<T, NoInput>) {
    return NoInput{};
  } else {
    return *reinterpret_cast<const T*>(base + off);
  }
}

template <typename Index, int N, typename Out, typename A, typename B, typename C, typename F>
__global__ void __launch_bounds__(kElementwiseThreads)
    strided_kernel(Index n, OffsetCalculator<N, Index> calc, F fn, char* out, const char* a,
                   const char* b, const char* c) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const auto off = calc.get(i);
    const auto va = load_at<A>(a, off.v[1]);
    const auto vb = load_at<B>(b, N > 2 ? off.v[N > 2 ? 2 : 0] : 0);
    const auto vc = load_at<C>(c, N > 3 ? off.v[N > 3 ? 3 : 0] : 0);
    *reinterpret_cast<Out*>(out + off.v[0]) = from_compute<Out>(apply_fn(fn, va, vb, vc));
  }
}

/// out = fn(a[, b[, c]]) elementwise on `stream` (see the file comment). Refs with a null data
/// pointer stand for NoInput slots. Throws CudaError when the launch fails.
template <typename Out, typename A, typename B = NoInput, typename C = NoInput, typename F>
void launch_elementwise(const F& fn, const TensorRef& out, const TensorRef& a, const TensorRef* b,
                        const TensorRef* c, cudaStream_t stream) {
  constexpr int N = 2 + kInputs<B> + kInputs<C>;
  const TensorRef* refs[N];
  refs[0] = &out;
  refs[1] = &a;
  if constexpr (N > 2) refs[2] = b;
  if constexpr (N > 3) refs[3] = c;
  const Geometry<N> g = geometry_of<N>(refs);
  const std::int64_t n = g.numel();
  if (n == 0) return;
  const void* b_data = N > 2 ? refs[N > 2 ? 2 : 0]->data : nullptr;
  const void* c_data = N > 3 ? refs[N > 3 ? 3 : 0]->data : nullptr;
  bool flat = true;
  for (int k = 0; k < N; ++k) {
    const auto elem = static_cast<std::int64_t>(dtype_size(refs[k]->dtype));
    flat = flat && is_flat(g, k, elem) &&
           reinterpret_cast<std::uintptr_t>(refs[k]->data) % (kVec * elem) == 0;
  }
  const int threads = kElementwiseThreads;
  if (flat) {
    const auto blocks = grid_blocks((n + kVec - 1) / kVec, threads, max_resident_blocks(threads));
    vectorized_kernel<Out, A, B, C><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        n, fn, static_cast<Out*>(out.data), static_cast<Ptr<A>>(a.data),
        static_cast<Ptr<B>>(b_data), static_cast<Ptr<C>>(c_data));
  } else {
    const auto blocks = grid_blocks(n, threads, max_resident_blocks(threads));
    auto* o = static_cast<char*>(out.data);
    const auto* pa = static_cast<const char*>(a.data);
    const auto* pb = static_cast<const char*>(b_data);
    const auto* pc = static_cast<const char*>(c_data);
    if (fits_32bit(g)) {
      strided_kernel<std::uint32_t, N, Out, A, B, C>
          <<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
              static_cast<std::uint32_t>(n), OffsetCalculator<N, std::uint32_t>(g), fn, o, pa, pb,
              pc);
    } else {
      strided_kernel<std::int64_t, N, Out, A, B, C>
          <<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
              n, OffsetCalculator<N, std::int64_t>(g), fn, o, pa, pb, pc);
    }
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ruccl::cuda
