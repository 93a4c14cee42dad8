#pragma once
// Reduction functors and warp helpers shared by reduce.cu, reduce_arg.cu and softmax.cu.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/kernels/device_types.cuh"

namespace ruccl::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

/// Accumulator of Sum/Mean/Prod over T (the CPU's SumAcc): double for floats, int64 otherwise.
template <typename T>
using SumAcc = std::conditional_t<kIsFloat<T>, double, std::int64_t>;
/// Accumulator of Max/Min over T: its compute type.
template <typename T>
using MaxAcc = Compute<T>;

struct SumReduce {
  template <typename A>
  __host__ __device__ static A identity() {
    return A{0};
  }
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return wrap_add(a, b);
  }
};
struct ProdReduce {
  template <typename A>
  __host__ __device__ static A identity() {
    return A{1};
  }
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return wrap_mul(a, b);
  }
};
/// The largest value of A (+infinity for floats), usable in device code.
template <typename A>
__host__ __device__ __forceinline__ A highest() {
  if constexpr (std::is_same_v<A, bool>) {
    return true;
  } else if constexpr (std::is_same_v<A, float>) {
    return __builtin_huge_valf();
  } else if constexpr (std::is_same_v<A, double>) {
    return __builtin_huge_val();
  } else if constexpr (std::is_same_v<A, std::int32_t>) {
    return INT32_MAX;
  } else {
    return INT64_MAX;
  }
}
/// The smallest value of A (-infinity for floats).
template <typename A>
__host__ __device__ __forceinline__ A lowest() {
  if constexpr (std::is_same_v<A, bool>) {
    return false;
  } else if constexpr (std::is_floating_point_v<A>) {
    return -highest<A>();
  } else if constexpr (std::is_same_v<A, std::int32_t>) {
    return INT32_MIN;
  } else {
    return INT64_MIN;
  }
}

struct MaxReduce {
  template <typename A>
  __host__ __device__ static A identity() {
    return lowest<A>();
  }
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return (a != a || a > b) ? a : b;  // NOLINT(misc-redundant-expression): NaN propagates
  }
};
struct MinReduce {
  template <typename A>
  __host__ __device__ static A identity() {
    return highest<A>();
  }
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return (a != a || a < b) ? a : b;  // NOLINT(misc-redundant-expression)
  }
};

/// __shfl_down_sync for every accumulator type (bool travels as int).
template <typename A>
__device__ __forceinline__ A shfl_down(A v, int delta) {
  if constexpr (std::is_same_v<A, bool>) {
    return __shfl_down_sync(kFullMask, static_cast<int>(v), delta) != 0;
  } else {
    return __shfl_down_sync(kFullMask, v, delta);
  }
}

/// Folds the 32 lanes' values with r in a fixed tree; lane 0 holds the result.
template <typename A, typename R>
__device__ __forceinline__ A warp_fold(A v, R r) {
#pragma unroll
  for (int w = 16; w > 0; w /= 2) v = r(v, shfl_down(v, w));
  return v;
}

}  // namespace ruccl::cuda
