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

}  // namespace

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
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cuda::unary for op ", op_name(op)));
}

}  // namespace ruccl::cuda
