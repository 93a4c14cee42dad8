// Unary elementwise ops: out = f(x), out of x's dtype.
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/elementwise_ops.cuh"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

namespace {

template <Kinds K, typename F>
void unary_as(const F& fn, const TensorRef& x, const TensorRef& out, cudaStream_t stream) {
  dispatch<K>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T>(fn, out, x, nullptr, nullptr, stream);
  });
}

template <typename F>
void predicate_as(const F& fn, const TensorRef& x, const TensorRef& out, cudaStream_t stream) {
  dispatch<Kinds::kNumeric>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<bool, T>(fn, out, x, nullptr, nullptr, stream);
  });
}

}  // namespace

void launch_unary_params(Op op, const TensorRef& x, double p0, double p1, const TensorRef& out,
                         cudaStream_t stream) {
  dispatch<Kinds::kFloating>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    launch_elementwise<T, T>(ParamsFn<C>{op, static_cast<C>(p0), static_cast<C>(p1)}, out, x,
                             nullptr, nullptr, stream);
  });
}

void launch_unary(Op op, const TensorRef& x, const TensorRef& out, cudaStream_t stream) {
  switch (op) {
    case Op::Neg:
      return unary_as<Kinds::kNumeric>(NegFn{}, x, out, stream);
    case Op::Abs:
      return unary_as<Kinds::kNumeric>(AbsFn{}, x, out, stream);
    case Op::Sign:
      return unary_as<Kinds::kNumeric>(SignFn{}, x, out, stream);
    case Op::Relu:
      return unary_as<Kinds::kNumeric>(ReluFn{}, x, out, stream);
    case Op::Exp:
      return unary_as<Kinds::kFloating>(ExpFn{}, x, out, stream);
    case Op::Log:
      return unary_as<Kinds::kFloating>(LogFn{}, x, out, stream);
    case Op::Sqrt:
      return unary_as<Kinds::kFloating>(SqrtFn{}, x, out, stream);
    case Op::Tanh:
      return unary_as<Kinds::kFloating>(TanhFn{}, x, out, stream);
    case Op::Sigmoid:
      return unary_as<Kinds::kFloating>(SigmoidFn{}, x, out, stream);
    case Op::Gelu:
      return unary_as<Kinds::kFloating>(GeluFn{}, x, out, stream);
    case Op::LogicalNot:
      return unary_as<Kinds::kBool>(LogicalNotFn{}, x, out, stream);
    case Op::Sin:
      return unary_as<Kinds::kFloating>(SinFn{}, x, out, stream);
    case Op::Cos:
      return unary_as<Kinds::kFloating>(CosFn{}, x, out, stream);
    case Op::Silu:
      return unary_as<Kinds::kFloating>(SiluFn{}, x, out, stream);
    case Op::Rsqrt:
      return unary_as<Kinds::kFloating>(RsqrtFn{}, x, out, stream);
    case Op::Erf:
      return unary_as<Kinds::kFloating>(ErfFn{}, x, out, stream);
    case Op::Log1p:
      return unary_as<Kinds::kFloating>(Log1pFn{}, x, out, stream);
    case Op::Expm1:
      return unary_as<Kinds::kFloating>(Expm1Fn{}, x, out, stream);
    case Op::IsNan:
      return predicate_as(IsNanFn{}, x, out, stream);
    case Op::IsFinite:
      return predicate_as(IsFiniteFn{}, x, out, stream);
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cuda::unary for op ", op_name(op)));
}

}  // namespace ruccl::cuda
