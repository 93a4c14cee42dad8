// Argmax and Argmin along one dim: the first index of the extreme value, or of the first NaN
// (the CPU backend's scan). One warp per output; each lane scans its elements in index order and
// the lanes' (value, index) pairs are folded by a rule that keeps the sequential scan's answer.
#include "cuda/core/check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/reduce.cuh"
#include "cuda/kernels/reduce_plan.h"

namespace ruccl::cuda {

namespace {

constexpr int kThreads = 256;

template <typename C>
struct Best {
  C value;
  std::int64_t index;  // -1: nothing seen yet
};

/// The pair the sequential scan would keep between two candidates.
template <bool kMax, typename C>
__device__ __forceinline__ Best<C> pick(const Best<C>& a, const Best<C>& b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const bool a_nan = a.value != a.value;  // NOLINT(misc-redundant-expression)
  const bool b_nan = b.value != b.value;  // NOLINT(misc-redundant-expression)
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return a.index < b.index ? a : b;
    return a_nan ? a : b;
  }
  if (a.value == b.value) return a.index < b.index ? a : b;
  return (kMax ? a.value > b.value : a.value < b.value) ? a : b;
}

template <typename T, bool kMax, typename Index>
__global__ void __launch_bounds__(kThreads)
    arg_kernel(const char* x, char* out, OffsetCalculator<2, Index> kept, std::int64_t stride,
               std::int64_t outputs, std::int64_t n) {
  using C = Compute<T>;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= outputs) return;
  const auto koff = kept.get(static_cast<Index>(warp));
  const char* row = x + koff.v[0];
  Best<C> best{C{}, -1};
  for (std::int64_t i = lane; i < n; i += 32) {
    const C v = to_compute(*reinterpret_cast<const T*>(row + i * stride));
    best = pick<kMax>(best, Best<C>{v, i});
  }
#pragma unroll
  for (int w = 16; w > 0; w /= 2) {
    Best<C> other;
    other.value = shfl_down(best.value, w);
    other.index = __shfl_down_sync(kFullMask, static_cast<long long>(best.index), w);
    best = pick<kMax>(best, other);
  }
  if (lane == 0) *reinterpret_cast<std::int64_t*>(out + koff.v[1]) = best.index;
}

}  // namespace

void launch_arg_reduce(Op op, const TensorRef& x, std::int64_t dim, const TensorRef& out,
                       cudaStream_t stream) {
  bool reduced[kMaxDims] = {};
  reduced[dim] = true;
  const ReducePlan p = plan_reduce(x, reduced, out);
  const std::int64_t n = x.sizes[dim];
  const std::int64_t stride = x.strides[dim] * static_cast<std::int64_t>(dtype_size(x.dtype));
  const auto blocks = static_cast<unsigned>((p.outputs * 32 + kThreads - 1) / kThreads);
  const bool small = fits_32bit(p.kept);
  const bool done = dispatch<Kinds::kNumeric>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto* xp = static_cast<const char*>(x.data);
    auto* op_ = static_cast<char*>(out.data);
    if (op == Op::Argmax) {
      if (small) {
        arg_kernel<T, true, std::uint32_t><<<blocks, kThreads, 0, stream>>>(
            xp, op_, OffsetCalculator<2, std::uint32_t>(p.kept), stride, p.outputs, n);
      } else {
        arg_kernel<T, true, std::int64_t><<<blocks, kThreads, 0, stream>>>(
            xp, op_, OffsetCalculator<2, std::int64_t>(p.kept), stride, p.outputs, n);
      }
    } else if (small) {
      arg_kernel<T, false, std::uint32_t><<<blocks, kThreads, 0, stream>>>(
          xp, op_, OffsetCalculator<2, std::uint32_t>(p.kept), stride, p.outputs, n);
    } else {
      arg_kernel<T, false, std::int64_t><<<blocks, kThreads, 0, stream>>>(
          xp, op_, OffsetCalculator<2, std::int64_t>(p.kept), stride, p.outputs, n);
    }
    RUCCL_CUDA_CHECK(cudaGetLastError());
  });
  RUCCL_ASSERT(done, "cuda::", op_name(op), " for dtype ", x.dtype);
}

}  // namespace ruccl::cuda
