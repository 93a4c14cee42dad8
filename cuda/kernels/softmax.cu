// Softmax and LogSoftmax along one dim, numerically stable like the CPU backend:
//   m = max_i x_i (NaN propagates), s = sum_i exp(x_i - m) accumulated in double,
//   softmax_i = exp(x_i - m) / s,    log_softmax_i = (x_i - m) - log(s).
// x (contiguous) is [outer, n, inner]. inner == 1: one warp per row (lanes stride the row, a fixed
// shuffle tree folds the lanes). inner > 1: one thread per (outer, column), the n elements of a
// column read in order, neighbouring threads on neighbouring columns.
#include "cuda/core/check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/reduce.cuh"

namespace ruccl::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T, bool kLog>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ out, std::int64_t rows,
                        std::int64_t n) {
  using C = Compute<T>;
  const std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (row >= rows) return;
  const T* xr = x + row * n;
  T* orow = out + row * n;
  C m = MaxReduce::identity<C>();
  for (std::int64_t i = lane; i < n; i += 32) m = MaxReduce{}(m, to_compute(xr[i]));
  m = __shfl_sync(kFullMask, warp_fold(m, MaxReduce{}), 0);
  double s = 0.0;
  for (std::int64_t i = lane; i < n; i += 32) s += static_cast<double>(exp(to_compute(xr[i]) - m));
  s = __shfl_sync(kFullMask, warp_fold(s, SumReduce{}), 0);
  if constexpr (kLog) {
    const C log_s = static_cast<C>(log(s));
    for (std::int64_t i = lane; i < n; i += 32)
      orow[i] = from_compute<T>((to_compute(xr[i]) - m) - log_s);
  } else {
    const C sc = static_cast<C>(s);
    for (std::int64_t i = lane; i < n; i += 32)
      orow[i] = from_compute<T>(exp(to_compute(xr[i]) - m) / sc);
  }
}

template <typename T, bool kLog>
__global__ void __launch_bounds__(kThreads)
    softmax_columns_kernel(const T* __restrict__ x, T* __restrict__ out, std::int64_t outer,
                           std::int64_t n, std::int64_t inner) {
  using C = Compute<T>;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  const std::int64_t o = t / inner;
  const std::int64_t c = t - o * inner;
  const T* xc = x + o * n * inner + c;
  T* oc = out + o * n * inner + c;
  C m = MaxReduce::identity<C>();
  for (std::int64_t i = 0; i < n; ++i) m = MaxReduce{}(m, to_compute(xc[i * inner]));
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(exp(to_compute(xc[i * inner]) - m));
  const C log_s = static_cast<C>(log(s));
  const C sc = static_cast<C>(s);
  for (std::int64_t i = 0; i < n; ++i) {
    const C v = to_compute(xc[i * inner]) - m;
    oc[i * inner] = kLog ? from_compute<T>(v - log_s) : from_compute<T>(exp(v) / sc);
  }
}

template <typename T, bool kLog>
void softmax_typed(const T* x, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner,
                   cudaStream_t stream) {
  if (inner == 1) {
    const auto blocks = static_cast<unsigned>((outer * 32 + kThreads - 1) / kThreads);
    softmax_rows_kernel<T, kLog><<<blocks, kThreads, 0, stream>>>(x, out, outer, n);
  } else {
    const auto blocks = static_cast<unsigned>((outer * inner + kThreads - 1) / kThreads);
    softmax_columns_kernel<T, kLog><<<blocks, kThreads, 0, stream>>>(x, out, outer, n, inner);
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_softmax(Op op, const TensorRef& x, std::int64_t outer, std::int64_t n,
                    std::int64_t inner, const TensorRef& out, cudaStream_t stream) {
  const bool done = dispatch<Kinds::kFloating>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto* xp = static_cast<const T*>(x.data);
    auto* op_ = static_cast<T*>(out.data);
    if (op == Op::LogSoftmax) {
      softmax_typed<T, true>(xp, op_, outer, n, inner, stream);
    } else {
      softmax_typed<T, false>(xp, op_, outer, n, inner, stream);
    }
  });
  RUCCL_ASSERT(done, "cuda::", op_name(op), " for dtype ", x.dtype);
}

}  // namespace ruccl::cuda
