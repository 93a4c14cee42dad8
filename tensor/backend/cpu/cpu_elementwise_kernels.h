#pragma once
// Elementwise math for the CPU backend: how each op computes one element (functors), and the
// loops that apply a functor to one strided run of for_each_run. Contiguous runs go through
// loops over fixed blocks of kBlock elements with __restrict pointer parameters: the compiler
// vectorises those even under GCC's -O2 "very cheap" cost model (no alias checks, no epilogue
// needed inside a block). GCC only honours __restrict on parameters, hence the small helpers. Half
// and BFloat16 are loaded as float, computed in float and rounded once on store. Large contiguous
// outputs are written with non-temporal stores (see kStreamingMinBytes).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "tensor/backend/cpu/cpu_vector_math.h"
#include "tensor/backend/cpu/strided_loop.h"
#include "tensor/core/dtype.h"

namespace ruccl::cpu {

constexpr std::int64_t kBlock = 16;

/// Contiguous outputs of at least this many bytes in one run are written with non-temporal
/// (streaming) stores: the result bypasses the caches, so its lines are not first read from memory
/// (write-allocate) and it does not evict the inputs. That is how a large c = a + b reaches
/// memcpy's bandwidth. Smaller results use ordinary stores and stay cached for the next op.
constexpr std::int64_t kStreamingMinBytes = std::int64_t{4} << 20;

template <typename T>
constexpr bool kIsReducedFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// The type arithmetic on T runs in: float for Half/BFloat16, T otherwise.
template <typename T>
using Compute = std::conditional_t<kIsReducedFloat<T>, float, T>;

template <typename T>
inline Compute<T> load(T v) {
  if constexpr (kIsReducedFloat<T>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

template <typename T, typename C>
inline T store(C v) {
  if constexpr (kIsReducedFloat<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// ---- integer arithmetic that wraps (two's complement) instead of overflowing into UB ----------

template <typename T>
inline T wrap_add(T a, T b) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
inline T wrap_sub(T a, T b) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
inline T wrap_mul(T a, T b) {
  if constexpr (kIsInteger<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename T>
inline T wrap_neg(T a) {
  return wrap_sub(T{}, a);
}

// ---- functors: one element in, one out, on Compute<T> values ------------------------------------

struct AddFn {
  template <typename C>
  C operator()(C a, C b) const {
    return wrap_add(a, b);
  }
};
struct SubFn {
  template <typename C>
  C operator()(C a, C b) const {
    return wrap_sub(a, b);
  }
};
struct MulFn {
  template <typename C>
  C operator()(C a, C b) const {
    return wrap_mul(a, b);
  }
};
struct DivFn {
  template <typename C>
  C operator()(C a, C b) const {
    return a / b;
  }
};
struct PowFn {
  template <typename C>
  C operator()(C a, C b) const {
    return std::pow(a, b);
  }
};
/// NaN-propagating maximum (torch.maximum): a NaN on either side gives NaN.
struct MaximumFn {
  template <typename C>
  C operator()(C a, C b) const {
    return (a != a || a > b) ? a : b;
  }  // NOLINT(misc-redundant-expression)
};
struct MinimumFn {
  template <typename C>
  C operator()(C a, C b) const {
    return (a != a || a < b) ? a : b;
  }  // NOLINT(misc-redundant-expression)
};
struct EqFn {
  template <typename C>
  bool operator()(C a, C b) const {
    return a == b;
  }
};
struct NeFn {
  template <typename C>
  bool operator()(C a, C b) const {
    return a != b;
  }
};
struct LtFn {
  template <typename C>
  bool operator()(C a, C b) const {
    return a < b;
  }
};
struct LeFn {
  template <typename C>
  bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct GtFn {
  template <typename C>
  bool operator()(C a, C b) const {
    return a > b;
  }
};
struct GeFn {
  template <typename C>
  bool operator()(C a, C b) const {
    return a >= b;
  }
};
struct LogicalAndFn {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOrFn {
  bool operator()(bool a, bool b) const { return a || b; }
};

struct NegFn {
  template <typename C>
  C operator()(C x) const {
    return wrap_neg(x);
  }
};
struct AbsFn {  // abs(-0.0) is +0.0
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fabs(x);
    } else {
      return x < C{} ? wrap_neg(x) : x;
    }
  }
};
struct SignFn {  // sign(NaN) is 0 like torch.sign (both comparisons are false)
  template <typename C>
  C operator()(C x) const {
    return static_cast<C>((C{} < x) - (x < C{}));
  }
};
struct ReluFn {  // relu(NaN) is NaN (the comparison is false)
  template <typename C>
  C operator()(C x) const {
    return x < C{} ? C{} : x;
  }
};
struct ExpFn {
  template <typename C>
  C operator()(C x) const {
    return fast_exp(x);
  }
};
struct LogFn {
  template <typename C>
  C operator()(C x) const {
    return std::log(x);
  }
};
struct SqrtFn {
  template <typename C>
  C operator()(C x) const {
    return std::sqrt(x);
  }
};
struct TanhFn {
  template <typename C>
  C operator()(C x) const {
    return std::tanh(x);
  }
};
struct SigmoidFn {
  template <typename C>
  C operator()(C x) const {
    return C{1} / (C{1} + fast_exp(-x));
  }
};
/// The exact GELU: x/2 * (1 + erf(x / sqrt(2))).
struct GeluFn {
  template <typename C>
  C operator()(C x) const {
    constexpr C kInvSqrt2 = static_cast<C>(0.70710678118654752440);
    return C{0.5} * x * (C{1} + fast_erf(x * kInvSqrt2));
  }
};
struct LogicalNotFn {
  bool operator()(bool x) const { return !x; }
};

// ---- loops over one run -----------------------------------------------------------------------

template <typename T>
inline T load_at(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline void store_at(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

/// Copies one 64-byte line from `line` to `dst` (both 64-byte aligned) bypassing the caches.
inline void stream_line(void* dst, const void* line) {
#if defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), _mm512_load_si512(line));
#elif defined(__AVX__)
  auto* d = static_cast<__m256i*>(dst);
  const auto* s = static_cast<const __m256i*>(line);
  _mm256_stream_si256(d, _mm256_load_si256(s));
  _mm256_stream_si256(d + 1, _mm256_load_si256(s + 1));
#elif defined(__SSE2__)
  auto* d = static_cast<__m128i*>(dst);
  const auto* s = static_cast<const __m128i*>(line);
  for (int k = 0; k < 4; ++k) _mm_stream_si128(d + k, _mm_load_si128(s + k));
#else
  std::memcpy(dst, line, 64);
#endif
}

/// o[i] = gen(i) for i in [0, n) with non-temporal stores of whole cache lines (ordinary stores
/// for the unaligned head and the tail), then a store fence so other threads see the data.
template <typename Out, typename Gen>
inline void write_streaming(Out* o, std::int64_t n, Gen gen) {
  constexpr auto kLine = static_cast<std::int64_t>(64 / sizeof(Out));
  std::int64_t i = 0;
  for (; i < n && reinterpret_cast<std::uintptr_t>(o + i) % 64 != 0; ++i) o[i] = gen(i);
  alignas(64) Out line[kLine];
  for (; i + kLine <= n; i += kLine) {
    for (std::int64_t j = 0; j < kLine; ++j) line[j] = gen(i + j);
    stream_line(o + i, line);
  }
  for (; i < n; ++i) o[i] = gen(i);
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

template <typename Out>
inline bool use_streaming(std::int64_t n) {
  return n * static_cast<std::int64_t>(sizeof(Out)) >= kStreamingMinBytes && 64 % sizeof(Out) == 0;
}

/// out[i] = f(x[i], y[i]) over contiguous arrays (blocked so the compiler vectorises).
template <typename In, typename Out, typename F>
inline void binary_contiguous(Out* __restrict o, const In* __restrict x, const In* __restrict y,
                              std::int64_t n, F f) {
  if (use_streaming<Out>(n)) {
    return write_streaming(o, n,
                           [=](std::int64_t k) { return store<Out>(f(load(x[k]), load(y[k]))); });
  }
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (std::int64_t j = 0; j < kBlock; ++j) {
      o[i + j] = store<Out>(f(load(x[i + j]), load(y[i + j])));
    }
  }
  for (; i < n; ++i) o[i] = store<Out>(f(load(x[i]), load(y[i])));
}

/// out[i] = f(x[i], s) (scalar on the right, or on the left when `swap`).
template <typename In, typename Out, bool kSwap, typename F>
inline void binary_scalar(Out* __restrict o, const In* __restrict x, Compute<In> s, std::int64_t n,
                          F f) {
  auto g = [&](Compute<In> v) { return kSwap ? f(s, v) : f(v, s); };
  if (use_streaming<Out>(n)) {
    return write_streaming(o, n, [=](std::int64_t k) { return store<Out>(g(load(x[k]))); });
  }
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (std::int64_t j = 0; j < kBlock; ++j) o[i + j] = store<Out>(g(load(x[i + j])));
  }
  for (; i < n; ++i) o[i] = store<Out>(g(load(x[i])));
}

/// p[i] = f(p[i], s) over a contiguous array, in place. One restrict-qualified pointer (reading
/// and writing an element through it is no aliasing), blocked like binary_scalar, so the compiler
/// vectorises the read-modify-write; ordinary stores, as the lines were just read into the cache.
template <typename T, typename F>
inline void scalar_in_place_contiguous(T* __restrict p, Compute<T> s, std::int64_t n, F f) {
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (std::int64_t j = 0; j < kBlock; ++j) p[i + j] = store<T>(f(load(p[i + j]), s));
  }
  for (; i < n; ++i) p[i] = store<T>(f(load(p[i]), s));
}

/// One run of an in-place scalar op: ptr[0] = the tensor written.
template <typename T, typename F>
inline void scalar_in_place_run(const StridedRun<1>& r, Compute<T> s, F f) {
  if (r.stride[0] == static_cast<std::int64_t>(sizeof(T))) {
    return scalar_in_place_contiguous<T>(reinterpret_cast<T*>(r.ptr[0]), s, r.n, f);
  }
  char* p = r.ptr[0];
  for (std::int64_t i = 0; i < r.n; ++i, p += r.stride[0]) {
    store_at<T>(p, store<T>(f(load(load_at<T>(p)), s)));
  }
}

/// One run of a binary op: ptr[0] = out, ptr[1] = a, ptr[2] = b.
template <typename In, typename Out, typename F>
inline void binary_run(const StridedRun<3>& r, F f) {
  constexpr auto si = static_cast<std::int64_t>(sizeof(In));
  constexpr auto so = static_cast<std::int64_t>(sizeof(Out));
  if (r.stride[0] == so) {
    auto* o = reinterpret_cast<Out*>(r.ptr[0]);
    const auto* x = reinterpret_cast<const In*>(r.ptr[1]);
    const auto* y = reinterpret_cast<const In*>(r.ptr[2]);
    if (r.stride[1] == si && r.stride[2] == si) return binary_contiguous<In, Out>(o, x, y, r.n, f);
    if (r.stride[1] == si && r.stride[2] == 0) {
      return binary_scalar<In, Out, false>(o, x, load(*y), r.n, f);
    }
    if (r.stride[1] == 0 && r.stride[2] == si) {
      return binary_scalar<In, Out, true>(o, y, load(*x), r.n, f);
    }
  }
  char* o = r.ptr[0];
  const char* x = r.ptr[1];
  const char* y = r.ptr[2];
  for (std::int64_t i = 0; i < r.n; ++i, o += r.stride[0], x += r.stride[1], y += r.stride[2]) {
    store_at<Out>(o, store<Out>(f(load(load_at<In>(x)), load(load_at<In>(y)))));
  }
}

/// out[i] = f(x[i]) over contiguous arrays. (Restrict-qualified parameters: GCC ignores
/// __restrict on local variables.) kStream = false keeps ordinary stores at every size: the
/// functors with parameters (LeakyReluFn, ...) run 5-7x slower through write_streaming's line
/// buffer than through the blocked loop (measured on 1-4 Mi floats), which the bandwidth saved by
/// non-temporal stores does not repay.
template <typename In, typename Out, typename F, bool kStream = true>
inline void unary_contiguous(Out* __restrict o, const In* __restrict x, std::int64_t n, F f) {
  if (kStream && use_streaming<Out>(n)) {
    return write_streaming(o, n, [=](std::int64_t k) { return store<Out>(f(load(x[k]))); });
  }
  std::int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (std::int64_t j = 0; j < kBlock; ++j) o[i + j] = store<Out>(f(load(x[i + j])));
  }
  for (; i < n; ++i) o[i] = store<Out>(f(load(x[i])));
}

/// One run of a unary op: ptr[0] = out, ptr[1] = x (kStream: as unary_contiguous).
template <typename In, typename Out, typename F, bool kStream = true>
inline void unary_run(const StridedRun<2>& r, F f) {
  constexpr auto si = static_cast<std::int64_t>(sizeof(In));
  constexpr auto so = static_cast<std::int64_t>(sizeof(Out));
  if (r.stride[0] == so && r.stride[1] == si) {
    return unary_contiguous<In, Out, F, kStream>(reinterpret_cast<Out*>(r.ptr[0]),
                                                 reinterpret_cast<const In*>(r.ptr[1]), r.n, f);
  }
  char* o = r.ptr[0];
  const char* x = r.ptr[1];
  for (std::int64_t i = 0; i < r.n; ++i, o += r.stride[0], x += r.stride[1]) {
    store_at<Out>(o, store<Out>(f(load(load_at<In>(x)))));
  }
}

}  // namespace ruccl::cpu
