// In-place arithmetic with a scalar: t = f(t, s) for AddInPlace, SubInPlace, MulInPlace and
// DivInPlace (Tensor::add_ ... div_), in t's dtype with s rounded to it first, as binary_scalar
// computes them. One operand that is read and written: its own kernels, since the elementwise
// engine's (elementwise.cuh) take the output and the inputs as distinct __restrict__ pointers.
//   - dense and aligned to kVec elements: a vectorised grid-stride loop (one aligned vector load
//     and store per kVec elements, the tail by the first threads);
//   - otherwise the merged geometry (offset_calculator.h) walked by a grid-stride loop, 32-bit
//     index math when it fits. No two elements share memory (the frontend refuses stride 0), so
//     no thread reads what another writes.
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/elementwise_ops.cuh"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

namespace {

template <typename T, typename F>
__global__ void __launch_bounds__(kElementwiseThreads)
    in_place_vectorized_kernel(std::int64_t n, F fn, Compute<T> s, T* __restrict__ t) {
  const std::int64_t vectors = n / kVec;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto* v = reinterpret_cast<Aligned<T, kVec>*>(t);
  for (std::int64_t i = first; i < vectors; i += stride) {
    Aligned<T, kVec> x = v[i];
#pragma unroll
    for (int j = 0; j < kVec; ++j) x.v[j] = from_compute<T>(fn(to_compute(x.v[j]), s));
    v[i] = x;
  }
  for (std::int64_t i = vectors * kVec + first; i < n; i += stride) {
    t[i] = from_compute<T>(fn(to_compute(t[i]), s));
  }
}

template <typename Index, typename T, typename F>
__global__ void __launch_bounds__(kElementwiseThreads)
    in_place_strided_kernel(Index n, OffsetCalculator<1, Index> calc, F fn, Compute<T> s, char* t) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    T* p = reinterpret_cast<T*>(t + calc.get(i).v[0]);
    *p = from_compute<T>(fn(to_compute(*p), s));
  }
}

template <typename T, typename F>
void launch_in_place(const F& fn, const TensorRef& t, Compute<T> s, cudaStream_t stream) {
  const TensorRef* refs[1] = {&t};
  const Geometry<1> g = geometry_of<1>(refs);
  const std::int64_t n = g.numel();
  if (n == 0) return;
  const auto elem = static_cast<std::int64_t>(sizeof(T));
  const int threads = kElementwiseThreads;
  if (is_flat(g, 0, elem) && reinterpret_cast<std::uintptr_t>(t.data) % (kVec * elem) == 0) {
    const auto blocks = grid_blocks((n + kVec - 1) / kVec, threads, max_resident_blocks(threads));
    in_place_vectorized_kernel<T>
        <<<static_cast<unsigned>(blocks), threads, 0, stream>>>(n, fn, s, static_cast<T*>(t.data));
  } else {
    const auto blocks = grid_blocks(n, threads, max_resident_blocks(threads));
    auto* p = static_cast<char*>(t.data);
    if (fits_32bit(g)) {
      in_place_strided_kernel<std::uint32_t, T>
          <<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
              static_cast<std::uint32_t>(n), OffsetCalculator<1, std::uint32_t>(g), fn, s, p);
    } else {
      in_place_strided_kernel<std::int64_t, T>
          <<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
              n, OffsetCalculator<1, std::int64_t>(g), fn, s, p);
    }
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

template <Kinds K, typename F>
void in_place_as(const F& fn, const TensorRef& t, const ScalarArg& s, cudaStream_t stream) {
  dispatch<K>(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    // The scalar rounded to T first, as binary_scalar rounds it (and the CPU backend).
    launch_in_place<T>(fn, t, to_compute(from_compute<T>(s.as<C>())), stream);
  });
}

}  // namespace

void launch_scalar_in_place(Op op, const TensorRef& t, const ScalarArg& s, cudaStream_t stream) {
  switch (op) {
    case Op::AddInPlace:
      return in_place_as<Kinds::kNumeric>(AddFn{}, t, s, stream);
    case Op::SubInPlace:
      return in_place_as<Kinds::kNumeric>(SubFn{}, t, s, stream);
    case Op::MulInPlace:
      return in_place_as<Kinds::kNumeric>(MulFn{}, t, s, stream);
    case Op::DivInPlace:
      return in_place_as<Kinds::kFloating>(DivFn{}, t, s, stream);
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cuda::scalar_in_place for op ", op_name(op)));
}

}  // namespace ruccl::cuda
