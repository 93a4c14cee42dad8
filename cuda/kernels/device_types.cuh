#pragma once
// Element types on the device and the dtype dispatch of the CUDA kernels. DType maps to a storage
// type (__half, __nv_bfloat16, float, double, int32_t, int64_t, bool) and a compute type (float
// for the two 16-bit floats, the type itself otherwise), as on the CPU backend: 16-bit floats are
// loaded as float, computed in float and rounded to nearest even once on store. Integer + - * and
// negation wrap (two's complement) like the CPU backend's.
//
// dispatch<Kinds>(dtype, fn) instantiates fn only for the dtypes an op accepts (the same Kinds as
// CudaBackend::supports), which keeps nvcc's work per file to what can run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/kernels/dtype_kinds.h"
#include "tensor/core/dtype.h"

namespace ruccl::cuda {

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
constexpr bool kIsInt = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;
template <typename T>
constexpr bool kIsFloat = kIsHalfLike<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;

template <Kinds K, typename T>
constexpr bool accepts_type() {
  if constexpr (K == Kinds::kAll) {
    return true;
  } else if constexpr (K == Kinds::kNumeric) {
    return !std::is_same_v<T, bool>;
  } else if constexpr (K == Kinds::kFloating) {
    return kIsFloat<T>;
  } else {
    return std::is_same_v<T, bool>;
  }
}

/// Arithmetic type of T.
template <typename T>
using Compute = std::conditional_t<kIsHalfLike<T>, float, T>;

template <typename T>
__host__ __device__ __forceinline__ Compute<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

/// A value of any arithmetic type as T: through float for 16-bit floats, != 0 for bool,
/// static_cast otherwise (the CPU backend's convert()).
template <typename T, typename C>
__host__ __device__ __forceinline__ T from_compute(C v) {
  if constexpr (std::is_same_v<T, C>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != C{};
  } else {
    return static_cast<T>(v);
  }
}

/// Element conversion From -> To as the CPU backend's copy converts.
template <typename To, typename From>
__host__ __device__ __forceinline__ To convert(From v) {
  return from_compute<To>(to_compute(v));
}

template <typename T>
__device__ __forceinline__ T wrap_add(T a, T b) {
  if constexpr (kIsInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
__device__ __forceinline__ T wrap_sub(T a, T b) {
  if constexpr (kIsInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
__device__ __forceinline__ T wrap_mul(T a, T b) {
  if constexpr (kIsInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

/// Calls fn(T{}) with T the device storage type of `dtype` when `dtype` is of kinds K; returns
/// false (calling nothing) otherwise.
template <Kinds K, typename Fn>
bool dispatch(DType dtype, Fn&& fn) {
  if (!accepts(K, dtype)) return false;
  switch (dtype) {
    case DType::F16:
      if constexpr (accepts_type<K, __half>()) fn(__half{});
      return true;
    case DType::BF16:
      if constexpr (accepts_type<K, __nv_bfloat16>()) fn(__nv_bfloat16{});
      return true;
    case DType::F32:
      if constexpr (accepts_type<K, float>()) fn(float{});
      return true;
    case DType::F64:
      if constexpr (accepts_type<K, double>()) fn(double{});
      return true;
    case DType::I32:
      if constexpr (accepts_type<K, std::int32_t>()) fn(std::int32_t{});
      return true;
    case DType::I64:
      if constexpr (accepts_type<K, std::int64_t>()) fn(std::int64_t{});
      return true;
    case DType::Bool:
      if constexpr (accepts_type<K, bool>()) fn(bool{});
      return true;
  }
  return false;
}

}  // namespace ruccl::cuda
