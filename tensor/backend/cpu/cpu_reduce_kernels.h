#pragma once
// Reduction math for the CPU backend: the accumulator type of each reduction and how one strided
// run is folded into an accumulator.
//
// Summation order (fixed, so results are reproducible and independent of the thread count):
// a contiguous run is summed pairwise: runs longer than kPairwiseLeaf are split in two at a
// multiple of kLanes and the halves summed recursively; a leaf is summed into kLanes interleaved
// accumulators (lane j takes elements j, j + kLanes, ...), which are then added in a fixed tree
// (lane j += lane j + w for w = kLanes/2, ..., 1), and the leftover tail is added last. Floating
// sums accumulate in double (F16/BF16/F32 inputs are widened), integer and Bool sums in int64.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tensor/backend/cpu/cpu_elementwise_kernels.h"

namespace ruccl::cpu {

constexpr std::int64_t kLanes = 32;
constexpr std::int64_t kPairwiseLeaf = 2048;

/// Accumulator of Sum/Mean/Prod over T: double for floating T, int64 otherwise.
template <typename T>
using SumAcc =
    std::conditional_t<kIsReducedFloat<T> || std::is_floating_point_v<T>, double, std::int64_t>;

/// Accumulator of Max/Min over T: the compute type (float for Half/BFloat16).
template <typename T>
using MaxAcc = Compute<T>;

struct SumReduce {
  template <typename A>
  static A identity() {
    return A{0};
  }
  template <typename A>
  A operator()(A a, A b) const {
    return wrap_add(a, b);
  }
};
struct ProdReduce {
  template <typename A>
  static A identity() {
    return A{1};
  }
  template <typename A>
  A operator()(A a, A b) const {
    return wrap_mul(a, b);
  }
};
struct MaxReduce {
  template <typename A>
  static A identity() {
    if constexpr (std::is_same_v<A, bool>) {
      return false;
    } else if constexpr (std::numeric_limits<A>::has_infinity) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::lowest();
    }
  }
  template <typename A>
  A operator()(A a, A b) const {
    return MaximumFn{}(a, b);
  }
};
struct MinReduce {
  template <typename A>
  static A identity() {
    if constexpr (std::is_same_v<A, bool>) {
      return true;
    } else if constexpr (std::numeric_limits<A>::has_infinity) {
      return std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::max();
    }
  }
  template <typename A>
  A operator()(A a, A b) const {
    return MinimumFn{}(a, b);
  }
};

/// Folds the contiguous x[0, n) into one A with R, in the fixed pairwise order described above.
template <typename A, typename T, typename R>
A reduce_contiguous(const T* __restrict x, std::int64_t n, R r) {
  if (n > kPairwiseLeaf) {
    const std::int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
    // Named in order: argument evaluation order is unspecified, and walking memory backwards
    // leaf by leaf defeats the hardware prefetcher.
    const A left = reduce_contiguous<A>(x, half, r);
    const A right = reduce_contiguous<A>(x + half, n - half, r);
    return r(left, right);
  }
  // Fully unrolled so that the lanes live in vector registers rather than on the stack.
  A lanes[kLanes];
#pragma GCC unroll 32
  for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] = R::template identity<A>();
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 32
    for (std::int64_t j = 0; j < kLanes; ++j) {
      lanes[j] = r(lanes[j], static_cast<A>(load(x[i + j])));
    }
  }
  for (std::int64_t w = kLanes / 2; w > 0; w /= 2) {
    for (std::int64_t j = 0; j < w; ++j) lanes[j] = r(lanes[j], lanes[j + w]);
  }
  A acc = lanes[0];
  for (; i < n; ++i) acc = r(acc, static_cast<A>(load(x[i])));
  return acc;
}

/// Folds a run with a byte stride: pairwise like reduce_contiguous, sequential within a leaf.
template <typename A, typename T, typename R>
A reduce_strided(const char* x, std::int64_t stride, std::int64_t n, R r) {
  if (n > kPairwiseLeaf) {
    const std::int64_t half = n / 2;
    const A left = reduce_strided<A, T>(x, stride, half, r);
    const A right = reduce_strided<A, T>(x + half * stride, stride, n - half, r);
    return r(left, right);
  }
  A acc = R::template identity<A>();
  for (std::int64_t i = 0; i < n; ++i, x += stride) {
    acc = r(acc, static_cast<A>(load(load_at<T>(x))));
  }
  return acc;
}

/// acc[i] = r(acc[i], x[i]) over contiguous arrays.
template <typename A, typename T, typename R>
inline void accumulate_row(A* __restrict acc, const T* __restrict x, std::int64_t n, R r) {
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (std::int64_t j = 0; j < kBlock; ++j) {
      acc[i + j] = r(acc[i + j], static_cast<A>(load(x[i + j])));
    }
  }
  for (; i < n; ++i) acc[i] = r(acc[i], static_cast<A>(load(x[i])));
}

/// One run of the reduction engine: ptr[0] = accumulator (stride 0 when the run is reduced),
/// ptr[1] = x. A reduced run folds into one accumulator; a kept run updates one accumulator per
/// element (acc[i] = r(acc[i], x[i]), the loop that streams rows when reducing an outer dim).
template <typename A, typename T, typename R>
void reduce_run(const StridedRun<2>& run, R r) {
  constexpr auto sa = static_cast<std::int64_t>(sizeof(A));
  constexpr auto st = static_cast<std::int64_t>(sizeof(T));
  if (run.stride[0] == 0) {
    A* acc = reinterpret_cast<A*>(run.ptr[0]);
    const A part = run.stride[1] == st
                       ? reduce_contiguous<A>(reinterpret_cast<const T*>(run.ptr[1]), run.n, r)
                       : reduce_strided<A, T>(run.ptr[1], run.stride[1], run.n, r);
    *acc = r(*acc, part);
    return;
  }
  if (run.stride[0] == sa && run.stride[1] == st) {
    return accumulate_row<A, T>(reinterpret_cast<A*>(run.ptr[0]),
                                reinterpret_cast<const T*>(run.ptr[1]), run.n, r);
  }
  char* acc = run.ptr[0];
  const char* x = run.ptr[1];
  for (std::int64_t i = 0; i < run.n; ++i, acc += run.stride[0], x += run.stride[1]) {
    store_at<A>(acc, r(load_at<A>(acc), static_cast<A>(load(load_at<T>(x)))));
  }
}

}  // namespace ruccl::cpu
