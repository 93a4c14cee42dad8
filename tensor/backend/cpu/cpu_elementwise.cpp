// CpuBackend: which ops it supports per dtype, and the elementwise ops (unary, binary, where).
// Inputs arrive as views of out's shape (stride 0 where broadcast) and, for binary ops, with one
// common dtype (the frontend converts); comparisons and logical ops write Bool.
#include <cstring>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_elementwise_kernels.h"
#include "tensor/backend/cpu/cpu_elementwise_math.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/op_dtypes.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

// Which dtypes an op accepts.
using Kinds = DTypeSet;

template <Kinds K, typename T>
constexpr bool accepts() {
  if constexpr (K == Kinds::kAll) {
    return true;
  } else if constexpr (K == Kinds::kNumeric) {
    return !std::is_same_v<T, bool>;
  } else if constexpr (K == Kinds::kFloating) {
    return kIsReducedFloat<T> || std::is_floating_point_v<T>;
  } else {
    return std::is_same_v<T, bool>;
  }
}

// out = f(a, b) with In = a's dtype and Out = In, or bool when kBoolOut.
template <Kinds K, bool kBoolOut, typename F>
void binary_op(F f, const Tensor& a, const Tensor& b, const Tensor& out) {
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<K, T>()) {
      using Out = std::conditional_t<kBoolOut, bool, T>;
      parallel_for_each_run<3>(out.shape(), {&out, &a, &b},
                               [f](const StridedRun<3>& r) { binary_run<T, Out>(r, f); });
    }
  });
}

// out = f(x) with In = x's dtype and Out = In, or bool when kBoolOut (isnan, isfinite).
template <Kinds K, typename F, bool kBoolOut = false>
void unary_op(F f, const Tensor& x, const Tensor& out) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<K, T>()) {
      using Out = std::conditional_t<kBoolOut, bool, T>;
      parallel_for_each_run<2>(out.shape(), {&out, &x},
                               [f](const StridedRun<2>& r) { unary_run<T, Out>(r, f); });
    }
  });
}

// out = f(x) for a functor template F<Compute<T>> made from the call's parameters.
template <template <typename> class F, typename Make>
void unary_params_op(Make make, const Tensor& x, const Tensor& out) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<Kinds::kFloating, T>()) {
      using Fn = F<Compute<T>>;
      const Fn f = make(Compute<T>{});
      parallel_for_each_run<2>(out.shape(), {&out, &x}, [f](const StridedRun<2>& r) {
        unary_run<T, T, Fn, false>(r, f);  // no streaming stores: see unary_contiguous
      });
    }
  });
}

/// where over a flat run: o and c contiguous, x and y each contiguous or one broadcast value (a
/// relu backward's where(mask, g, 0)).
template <typename T, bool kXScalar, bool kYScalar>
void where_flat(T* __restrict o, const bool* __restrict c, const T* __restrict x,
                const T* __restrict y, std::int64_t n) {
  const T xs = *x;
  const T ys = *y;
  // The mask read as bytes and both branches loaded unconditionally (they are in bounds): g++
  // then vectorises a blend; with `bool` loads it branches, mispredicting on every other element
  // of a relu mask (5x slower).
  const auto* mask = reinterpret_cast<const std::uint8_t*>(c);
  for (std::int64_t i = 0; i < n; ++i) {
    const T xv = kXScalar ? xs : x[i];
    const T yv = kYScalar ? ys : y[i];
    o[i] = mask[i] != 0 ? xv : yv;
  }
}

/// The where_flat for the run's strides, or nullptr when they are not flat.
template <typename T>
auto where_flat_for(const StridedRun<4>& r)
    -> void (*)(T*, const bool*, const T*, const T*, std::int64_t) {
  constexpr auto s = static_cast<std::int64_t>(sizeof(T));
  if (r.n == 0 || r.stride[0] != s || r.stride[1] != 1) return nullptr;
  const std::int64_t sx = r.stride[2];
  const std::int64_t sy = r.stride[3];
  if ((sx != s && sx != 0) || (sy != s && sy != 0)) return nullptr;
  if (sx == s) return sy == s ? &where_flat<T, false, false> : &where_flat<T, false, true>;
  return sy == s ? &where_flat<T, true, false> : &where_flat<T, true, true>;
}

void check_supported(const CpuBackend& backend, Op op, DType dtype) {
  RUCCL_CHECK(backend.supports(op, dtype), NotImplementedError,
              "not implemented: cpu::", op_name(op), " for dtype ", dtype);
}

}  // namespace

bool CpuBackend::supports(Op op, DType dtype) const { return op_supports(op, dtype); }

void CpuBackend::unary(Op op, const Tensor& x, const Tensor& out) {
  check_supported(*this, op, x.dtype());
  const bool bool_out = op == Op::IsNan || op == Op::IsFinite;
  RUCCL_ASSERT(x.shape() == out.shape() &&
                   (bool_out ? out.dtype() == DType::Bool : x.dtype() == out.dtype()),
               "cpu::", op_name(op));
  switch (op) {
    case Op::Neg:
      return unary_op<Kinds::kNumeric>(NegFn{}, x, out);
    case Op::Abs:
      return unary_op<Kinds::kNumeric>(AbsFn{}, x, out);
    case Op::Sign:
      return unary_op<Kinds::kNumeric>(SignFn{}, x, out);
    case Op::Relu:
      return unary_op<Kinds::kNumeric>(ReluFn{}, x, out);
    case Op::Exp:
      return unary_op<Kinds::kFloating>(ExpFn{}, x, out);
    case Op::Log:
      return unary_op<Kinds::kFloating>(LogFn{}, x, out);
    case Op::Sqrt:
      return unary_op<Kinds::kFloating>(SqrtFn{}, x, out);
    case Op::Tanh:
      return unary_op<Kinds::kFloating>(TanhFn{}, x, out);
    case Op::Sigmoid:
      return unary_op<Kinds::kFloating>(SigmoidFn{}, x, out);
    case Op::Gelu:
      return unary_op<Kinds::kFloating>(GeluFn{}, x, out);
    case Op::LogicalNot:
      return unary_op<Kinds::kBool>(LogicalNotFn{}, x, out);
    case Op::Sin:
      return unary_op<Kinds::kFloating>(SinFn{}, x, out);
    case Op::Cos:
      return unary_op<Kinds::kFloating>(CosFn{}, x, out);
    case Op::Silu:
      return unary_op<Kinds::kFloating>(SiluFn{}, x, out);
    case Op::Rsqrt:
      return unary_op<Kinds::kFloating>(RsqrtFn{}, x, out);
    case Op::Erf:
      return unary_op<Kinds::kFloating>(ErfFn{}, x, out);
    case Op::Log1p:
      return unary_op<Kinds::kFloating>(Log1pFn{}, x, out);
    case Op::Expm1:
      return unary_op<Kinds::kFloating>(Expm1Fn{}, x, out);
    case Op::IsNan:
      return unary_op<Kinds::kNumeric, IsNanFn, true>(IsNanFn{}, x, out);
    case Op::IsFinite:
      return unary_op<Kinds::kNumeric, IsFiniteFn, true>(IsFiniteFn{}, x, out);
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cpu::unary for op ", op_name(op)));
}

void CpuBackend::unary_params(Op op, const Tensor& x, double p0, double p1, const Tensor& out) {
  check_supported(*this, op, x.dtype());
  RUCCL_ASSERT(x.shape() == out.shape() && x.dtype() == out.dtype(), "cpu::", op_name(op));
  switch (op) {
    case Op::LeakyRelu:
      return unary_params_op<LeakyReluFn>(
          [p0](auto c) { return LeakyReluFn<decltype(c)>{static_cast<decltype(c)>(p0)}; }, x, out);
    case Op::Elu:
      return unary_params_op<EluFn>(
          [p0](auto c) { return EluFn<decltype(c)>{static_cast<decltype(c)>(p0)}; }, x, out);
    case Op::Softplus:
      return unary_params_op<SoftplusFn>(
          [p0, p1](auto c) {
            using C = decltype(c);
            return SoftplusFn<C>{static_cast<C>(p0), static_cast<C>(p1)};
          },
          x, out);
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cpu::unary_params for op ", op_name(op)));
}

void CpuBackend::binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_supported(*this, op, a.dtype());
  RUCCL_ASSERT(a.dtype() == b.dtype() && a.shape() == out.shape() && b.shape() == out.shape(),
               "cpu::", op_name(op));
  switch (op) {
    case Op::Add:
      return binary_op<Kinds::kNumeric, false>(AddFn{}, a, b, out);
    case Op::Sub:
      return binary_op<Kinds::kNumeric, false>(SubFn{}, a, b, out);
    case Op::Mul:
      return binary_op<Kinds::kNumeric, false>(MulFn{}, a, b, out);
    case Op::Div:
      return binary_op<Kinds::kFloating, false>(DivFn{}, a, b, out);
    case Op::Pow:
      return binary_op<Kinds::kFloating, false>(PowFn{}, a, b, out);
    case Op::Maximum:
      return binary_op<Kinds::kNumeric, false>(MaximumFn{}, a, b, out);
    case Op::Minimum:
      return binary_op<Kinds::kNumeric, false>(MinimumFn{}, a, b, out);
    case Op::Eq:
      return binary_op<Kinds::kAll, true>(EqFn{}, a, b, out);
    case Op::Ne:
      return binary_op<Kinds::kAll, true>(NeFn{}, a, b, out);
    case Op::Lt:
      return binary_op<Kinds::kAll, true>(LtFn{}, a, b, out);
    case Op::Le:
      return binary_op<Kinds::kAll, true>(LeFn{}, a, b, out);
    case Op::Gt:
      return binary_op<Kinds::kAll, true>(GtFn{}, a, b, out);
    case Op::Ge:
      return binary_op<Kinds::kAll, true>(GeFn{}, a, b, out);
    case Op::LogicalAnd:
      return binary_op<Kinds::kBool, true>(LogicalAndFn{}, a, b, out);
    case Op::LogicalOr:
      return binary_op<Kinds::kBool, true>(LogicalOrFn{}, a, b, out);
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cpu::binary for op ", op_name(op)));
}

void CpuBackend::binary_scalar(Op op, const Tensor& a, Scalar b, ScalarSide side,
                               const Tensor& out) {
  // Host memory is as near as the scalar itself: a broadcast 0-d tensor runs the binary kernels.
  const Tensor s = Tensor::scalar(b, a.dtype(), a.device()).expand(a.shape());
  if (side == ScalarSide::Right) {
    binary(op, a, s, out);
  } else {
    binary(op, s, a, out);
  }
}

namespace {

/// t = f(t, value) in place, in t's dtype (the scalar converted as fill converts it).
template <Kinds K, typename F>
void scalar_in_place_op(F f, const Tensor& t, Scalar value) {
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<K, T>()) {
      T v;
      if constexpr (kIsReducedFloat<T>) {
        v = T(value.to<float>());
      } else {
        v = value.to<T>();
      }
      const Compute<T> s = load(v);
      parallel_for_each_run<1>(t.shape(), {&t},
                               [s, f](const StridedRun<1>& r) { scalar_in_place_run<T>(r, s, f); });
    }
  });
}

}  // namespace

void CpuBackend::scalar_in_place(Op op, const Tensor& t, Scalar s) {
  check_supported(*this, op, t.dtype());
  switch (op) {
    case Op::AddInPlace:
      return scalar_in_place_op<Kinds::kNumeric>(AddFn{}, t, s);
    case Op::SubInPlace:
      return scalar_in_place_op<Kinds::kNumeric>(SubFn{}, t, s);
    case Op::MulInPlace:
      return scalar_in_place_op<Kinds::kNumeric>(MulFn{}, t, s);
    case Op::DivInPlace:
      return scalar_in_place_op<Kinds::kFloating>(DivFn{}, t, s);
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cpu::scalar_in_place for op ", op_name(op)));
}

void CpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  RUCCL_ASSERT(cond.dtype() == DType::Bool && a.dtype() == out.dtype() &&
               b.dtype() == out.dtype() && cond.shape() == out.shape() &&
               a.shape() == out.shape() && b.shape() == out.shape());
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    parallel_for_each_run<4>(out.shape(), {&out, &cond, &a, &b}, [](const StridedRun<4>& r) {
      if (const auto flat = where_flat_for<T>(r)) {
        return flat(reinterpret_cast<T*>(r.ptr[0]), reinterpret_cast<const bool*>(r.ptr[1]),
                    reinterpret_cast<const T*>(r.ptr[2]), reinterpret_cast<const T*>(r.ptr[3]),
                    r.n);
      }
      char* o = r.ptr[0];
      const char* c = r.ptr[1];
      const char* x = r.ptr[2];
      const char* y = r.ptr[3];
      for (std::int64_t i = 0; i < r.n;
           ++i, o += r.stride[0], c += r.stride[1], x += r.stride[2], y += r.stride[3]) {
        std::memcpy(o, load_at<bool>(c) ? x : y, sizeof(T));
      }
    });
  });
}

}  // namespace ruccl::cpu
