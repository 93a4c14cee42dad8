#pragma once
// The reduction kernels and their launch (reduce_plan.h), shared by reduce_sum.cu (Sum, Mean,
// Prod) and reduce_minmax.cu (Max, Min): two files so nvcc builds them in parallel.
#include "cuda/backend/runtime.h"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/reduce.cuh"
#include "cuda/kernels/reduce_plan.h"

namespace ruccl::cuda::reduce_detail {

constexpr int kReduceThreads = 256;
constexpr int kUnroll = 4;

/// How the accumulator becomes the output: divided by `divisor` for Mean, converted to Out.
struct Finish {
  bool mean = false;
  double divisor = 1.0;
  template <typename Out, typename A>
  __device__ __forceinline__ Out operator()(A acc) const {
    if constexpr (std::is_same_v<A, double>) {
      if (mean) acc = acc / divisor;
    }
    if constexpr (kIsHalfLike<Out>) {
      return from_compute<Out>(static_cast<float>(acc));
    } else {
      return from_compute<Out>(acc);
    }
  }
};

template <typename T, typename A, typename R, typename Index>
__device__ __forceinline__ A load_acc(const char* x, const OffsetCalculator<1, Index>& red,
                                      Index i) {
  return static_cast<A>(to_compute(*reinterpret_cast<const T*>(x + red.get(i).v[0])));
}

/// One warp per (output, split): lanes take elements lane, lane + 32, ... of the split's chunk.
template <typename T, typename A, typename Out, typename R, typename Index>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_row_kernel(const char* x, char* out, OffsetCalculator<2, Index> kept,
                      OffsetCalculator<1, Index> red, Index outputs, Index length, Index splits,
                      Index chunk, A* partial, R r, Finish finish) {
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= static_cast<std::int64_t>(outputs) * splits) return;  // whole warps leave
  const Index o = static_cast<Index>(warp / splits);
  const Index s = static_cast<Index>(warp % splits);
  const auto koff = kept.get(o);
  const char* xo = x + koff.v[0];
  const Index begin = s * chunk;
  const Index end = begin + chunk < length ? begin + chunk : length;
  A acc = R::template identity<A>();
  Index i = begin + lane;
  // kUnroll loads in flight per lane, folded in element order.
  for (; i + (kUnroll - 1) * 32 < end; i += kUnroll * 32) {
    A v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load_acc<T, A, R>(xo, red, i + u * 32);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc = r(acc, v[u]);
  }
  for (; i < end; i += 32) acc = r(acc, load_acc<T, A, R>(xo, red, i));
  acc = warp_fold(acc, r);
  if (lane != 0) return;
  if (splits == 1) {
    *reinterpret_cast<Out*>(out + koff.v[1]) = finish.template operator()<Out>(acc);
  } else {
    partial[static_cast<std::int64_t>(o) * splits + s] = acc;
  }
}

/// One thread per (output, split = blockIdx.y): the split's elements folded in order.
template <typename T, typename A, typename Out, typename R, typename Index>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_column_kernel(const char* x, char* out, OffsetCalculator<2, Index> kept,
                         OffsetCalculator<1, Index> red, Index outputs, Index length, Index splits,
                         Index chunk, A* partial, R r, Finish finish) {
  const std::int64_t o64 = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o64 >= outputs) return;
  const Index o = static_cast<Index>(o64);
  const Index s = blockIdx.y;
  const auto koff = kept.get(o);
  const char* xo = x + koff.v[0];
  const Index begin = s * chunk;
  const Index end = begin + chunk < length ? begin + chunk : length;
  A acc = R::template identity<A>();
  for (Index i = begin; i < end; ++i) acc = r(acc, load_acc<T, A, R>(xo, red, i));
  if (splits == 1) {
    *reinterpret_cast<Out*>(out + koff.v[1]) = finish.template operator()<Out>(acc);
  } else {
    partial[static_cast<std::int64_t>(o) * splits + s] = acc;
  }
}

/// Folds each output's partials: one warp per output, lane l takes partials l, l + 32, ... in
/// order, then the fixed shuffle tree.
template <typename A, typename Out, typename R, typename Index>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_partials_kernel(const A* partial, char* out, OffsetCalculator<2, Index> kept,
                           Index outputs, Index splits, R r, Finish finish) {
  const std::int64_t o64 = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (o64 >= outputs) return;  // whole warps leave
  const Index o = static_cast<Index>(o64);
  const A* p = partial + static_cast<std::int64_t>(o) * splits;
  A acc = R::template identity<A>();
  for (Index s = lane; s < splits; s += 32) acc = r(acc, p[s]);
  acc = warp_fold(acc, r);
  if (lane == 0) {
    *reinterpret_cast<Out*>(out + kept.get(o).v[1]) = finish.template operator()<Out>(acc);
  }
}

template <typename T, typename A, typename Out, typename R, typename Index>
void run_plan(const ReducePlan& p, const TensorRef& x, const TensorRef& out, R r, Finish finish,
              Device device, cudaStream_t stream) {
  const OffsetCalculator<2, Index> kept(p.kept);
  const OffsetCalculator<1, Index> red(p.reduced);
  std::unique_ptr<Workspace> ws;
  A* partial = nullptr;
  if (p.splits > 1) {
    ws = std::make_unique<Workspace>(static_cast<std::size_t>(p.outputs * p.splits) * sizeof(A),
                                     device);
    partial = static_cast<A*>(ws->data());
  }
  const auto* xp = static_cast<const char*>(x.data);
  auto* op = static_cast<char*>(out.data);
  const auto outputs = static_cast<Index>(p.outputs);
  const auto length = static_cast<Index>(p.length);
  const auto splits = static_cast<Index>(p.splits);
  const auto chunk = static_cast<Index>(p.chunk);
  if (p.row) {
    const std::int64_t threads = p.outputs * p.splits * 32;
    const auto blocks = static_cast<unsigned>((threads + kReduceThreads - 1) / kReduceThreads);
    reduce_row_kernel<T, A, Out, R, Index><<<blocks, kReduceThreads, 0, stream>>>(
        xp, op, kept, red, outputs, length, splits, chunk, partial, r, finish);
  } else {
    const dim3 grid(static_cast<unsigned>((p.outputs + kReduceThreads - 1) / kReduceThreads),
                    static_cast<unsigned>(p.splits));
    reduce_column_kernel<T, A, Out, R, Index><<<grid, kReduceThreads, 0, stream>>>(
        xp, op, kept, red, outputs, length, splits, chunk, partial, r, finish);
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
  if (p.splits > 1) {
    const auto blocks =
        static_cast<unsigned>((p.outputs * 32 + kReduceThreads - 1) / kReduceThreads);
    reduce_partials_kernel<A, Out, R, Index>
        <<<blocks, kReduceThreads, 0, stream>>>(partial, op, kept, outputs, splits, r, finish);
    RUCCL_CUDA_CHECK(cudaGetLastError());
  }
}

template <typename A>
constexpr DType acc_dtype() {
  if constexpr (std::is_same_v<A, double>) {
    return DType::F64;
  } else if constexpr (std::is_same_v<A, float>) {
    return DType::F32;
  } else if constexpr (std::is_same_v<A, bool>) {
    return DType::Bool;
  } else {
    return DType::I64;
  }
}

inline bool plan_fits_32bit(const ReducePlan& p) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 31;
  return fits_32bit(p.kept) && fits_32bit(p.reduced) && p.outputs * p.splits * 32 < kLimit;
}

template <typename T, typename A, typename R>
void reduce_typed(const TensorRef& x, const bool* reduced, const TensorRef& out, R r, Finish finish,
                  Device device, cudaStream_t stream) {
  // The kernels write A; an output of another dtype takes A's values through a converting copy
  // (outputs are few next to the inputs a reduction reads).
  std::unique_ptr<Workspace> staged;
  TensorRef target = out;
  if (out.dtype != acc_dtype<A>()) {
    staged = std::make_unique<Workspace>(static_cast<std::size_t>(out.numel()) * sizeof(A), device);
    target.data = staged->data();
    target.dtype = acc_dtype<A>();
    std::int64_t stride = 1;
    for (int d = out.ndim - 1; d >= 0; --d) {
      target.strides[d] = stride;
      stride *= out.sizes[d];
    }
  }
  const ReducePlan p = plan_reduce(x, reduced, target);
  if (plan_fits_32bit(p)) {
    run_plan<T, A, A, R, std::uint32_t>(p, x, target, r, finish, device, stream);
  } else {
    run_plan<T, A, A, R, std::int64_t>(p, x, target, r, finish, device, stream);
  }
  if (staged) launch_copy(target, out, stream);
}

}  // namespace ruccl::cuda::reduce_detail
