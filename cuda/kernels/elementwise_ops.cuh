#pragma once
// How each elementwise op computes one element on the device, on compute values (float for the
// 16-bit floats): the CPU backend's functors (cpu_elementwise_kernels.h) with CUDA's math
// functions. NaN rules match the CPU's: maximum/minimum propagate NaN, sign(NaN) and relu(NaN)
// follow the comparisons.
#include <cuda_runtime.h>

#include <type_traits>

#include "cuda/kernels/device_types.cuh"

namespace ruccl::cuda {

#define RUCCL_BINARY_FN(Name, expr)                              \
  struct Name {                                                  \
    template <typename C>                                        \
    __device__ __forceinline__ auto operator()(C a, C b) const { \
      return expr;                                               \
    }                                                            \
  }
#define RUCCL_UNARY_FN(Name, expr)                       \
  struct Name {                                          \
    template <typename C>                                \
    __device__ __forceinline__ C operator()(C x) const { \
      return expr;                                       \
    }                                                    \
  }

RUCCL_BINARY_FN(AddFn, wrap_add(a, b));
RUCCL_BINARY_FN(SubFn, wrap_sub(a, b));
RUCCL_BINARY_FN(MulFn, wrap_mul(a, b));
RUCCL_BINARY_FN(DivFn, a / b);
RUCCL_BINARY_FN(PowFn, pow(a, b));
RUCCL_BINARY_FN(MaximumFn, (a != a || a > b) ? a : b);  // NOLINT(misc-redundant-expression)
RUCCL_BINARY_FN(MinimumFn, (a != a || a < b) ? a : b);  // NOLINT(misc-redundant-expression)
RUCCL_BINARY_FN(EqFn, a == b);
RUCCL_BINARY_FN(NeFn, a != b);
RUCCL_BINARY_FN(LtFn, a < b);
RUCCL_BINARY_FN(LeFn, a <= b);
RUCCL_BINARY_FN(GtFn, a > b);
RUCCL_BINARY_FN(GeFn, a >= b);
RUCCL_BINARY_FN(LogicalAndFn, a&& b);
RUCCL_BINARY_FN(LogicalOrFn, a || b);

RUCCL_UNARY_FN(NegFn, wrap_sub(C{}, x));
RUCCL_UNARY_FN(SignFn, static_cast<C>((C{} < x) - (x < C{})));
RUCCL_UNARY_FN(ReluFn, x < C{} ? C{} : x);
RUCCL_UNARY_FN(ExpFn, exp(x));
RUCCL_UNARY_FN(LogFn, log(x));
RUCCL_UNARY_FN(SqrtFn, sqrt(x));
RUCCL_UNARY_FN(TanhFn, tanh(x));
RUCCL_UNARY_FN(SigmoidFn, C{1} / (C{1} + exp(-x)));
RUCCL_UNARY_FN(GeluFn, C{0.5} * x * (C{1} + erf(x * static_cast<C>(0.70710678118654752440))));
RUCCL_UNARY_FN(LogicalNotFn, !x);

struct AbsFn {  // abs(-0.0) is +0.0
  template <typename C>
  __device__ __forceinline__ C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return fabs(x);
    } else {
      return x < C{} ? wrap_sub(C{}, x) : x;
    }
  }
};

/// A binary functor with its right (or, when kLeft, left) operand fixed: the scalar-operand ops.
template <typename F, typename C, bool kLeft>
struct WithScalar {
  F fn;
  C s;
  __device__ __forceinline__ auto operator()(C x) const { return kLeft ? fn(s, x) : fn(x, s); }
};

#undef RUCCL_BINARY_FN
#undef RUCCL_UNARY_FN

}  // namespace ruccl::cuda
