#pragma once
// How each elementwise op computes one element on the device, on compute values (float for the
// 16-bit floats): the CPU backend's functors (cpu_elementwise_kernels.h) with CUDA's math
// functions. NaN rules match the CPU's: maximum/minimum propagate NaN, sign(NaN) and relu(NaN)
// follow the comparisons.
#include <cuda_runtime.h>

#include <type_traits>

#include "cuda/kernels/device_types.cuh"
#include "tensor/backend/backend.h"

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
// issue 30's element-wise math (ops helper); formulas as the CPU's cpu_elementwise_math.h.
RUCCL_UNARY_FN(SinFn, sin(x));
RUCCL_UNARY_FN(CosFn, cos(x));
RUCCL_UNARY_FN(SiluFn, x / (C{1} + exp(-x)));
RUCCL_UNARY_FN(RsqrtFn, C{1} / sqrt(x));
RUCCL_UNARY_FN(ErfFn, erf(x));
RUCCL_UNARY_FN(Log1pFn, log1p(x));
RUCCL_UNARY_FN(Expm1Fn, expm1(x));

/// isnan / isfinite (Bool out); integers are never NaN and always finite.
struct IsNanFn {
  template <typename C>
  __device__ __forceinline__ bool operator()(C x) const {
    return x != x;  // NOLINT(misc-redundant-expression)
  }
};
struct IsFiniteFn {
  template <typename C>
  __device__ __forceinline__ bool operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return isfinite(x);
    } else {
      return true;
    }
  }
};

/// The unary ops with parameters (Backend::unary_params): one functor, the op uniform over the
/// grid (as CompareFn).
template <typename C>
struct ParamsFn {
  Op op;
  C p0;
  C p1;
  __device__ __forceinline__ C operator()(C x) const {
    switch (op) {
      case Op::LeakyRelu:
        return x > C{} ? x : x * p0;
      case Op::Elu:
        return x > C{} ? x : p0 * expm1(x);
      default: {  // Softplus: beta p0, threshold p1
        const C z = x * p0;
        return z > p1 ? x : log1p(exp(z)) / p0;
      }
    }
  }
};

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

/// maximum or minimum (one instantiation for both: a uniform branch per element).
struct MinMaxFn {
  bool max;
  template <typename C>
  __device__ __forceinline__ C operator()(C a, C b) const {
    return max ? MaximumFn{}(a, b) : MinimumFn{}(a, b);
  }
};

/// The six comparisons behind one functor: nvcc compiles one kernel per dtype for all of them
/// (comparisons are memory-bound; the op is uniform across the grid).
struct CompareFn {
  Op op;
  template <typename C>
  __device__ __forceinline__ bool operator()(C a, C b) const {
    switch (op) {
      case Op::Eq:
        return a == b;
      case Op::Ne:
        return a != b;
      case Op::Lt:
        return a < b;
      case Op::Le:
        return a <= b;
      case Op::Gt:
        return a > b;
      default:
        return a >= b;
    }
  }
};

/// LogicalAnd (is_and) or LogicalOr.
struct LogicalFn {
  bool is_and;
  __device__ __forceinline__ bool operator()(bool a, bool b) const {
    return is_and ? (a && b) : (a || b);
  }
};

/// A binary functor with one operand fixed: fn(x, s), or fn(s, x) when `left` (the scalar-operand
/// ops; the side is a runtime flag so both sides share one kernel).
template <typename F, typename C>
struct WithScalar {
  F fn;
  C s;
  bool left;
  __device__ __forceinline__ auto operator()(C x) const { return left ? fn(s, x) : fn(x, s); }
};

#undef RUCCL_BINARY_FN
#undef RUCCL_UNARY_FN

}  // namespace ruccl::cuda
