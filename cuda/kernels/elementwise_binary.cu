// Binary arithmetic: out = f(a, b) with a, b and out of one dtype, b a tensor or a scalar.
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/elementwise_ops.cuh"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

namespace {

template <Kinds K, typename F>
void binary_as(const F& fn, const TensorRef& a, const TensorRef& b, const TensorRef& out,
               cudaStream_t stream) {
  dispatch<K>(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, T, T>(fn, out, a, &b, nullptr, stream);
  });
}

template <Kinds K, typename F>
void scalar_as(const F& fn, const TensorRef& a, const ScalarArg& s, bool left, const TensorRef& out,
               cudaStream_t stream) {
  dispatch<K>(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    // The scalar rounded to T first, as a 0-d tensor of T would be.
    const C value = to_compute(from_compute<T>(s.as<C>()));
    if (left) {
      launch_elementwise<T, T>(WithScalar<F, C, true>{fn, value}, out, a, nullptr, nullptr, stream);
    } else {
      launch_elementwise<T, T>(WithScalar<F, C, false>{fn, value}, out, a, nullptr, nullptr,
                               stream);
    }
  });
}

template <typename Visit>
void by_op(Op op, Visit&& visit) {
  switch (op) {
    case Op::Add:
      return visit.template run<Kinds::kNumeric>(AddFn{});
    case Op::Sub:
      return visit.template run<Kinds::kNumeric>(SubFn{});
    case Op::Mul:
      return visit.template run<Kinds::kNumeric>(MulFn{});
    case Op::Div:
      return visit.template run<Kinds::kFloating>(DivFn{});
    case Op::Pow:
      return visit.template run<Kinds::kFloating>(PowFn{});
    case Op::Maximum:
      return visit.template run<Kinds::kNumeric>(MaximumFn{});
    case Op::Minimum:
      return visit.template run<Kinds::kNumeric>(MinimumFn{});
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cuda::binary for op ", op_name(op)));
}

struct TensorOperand {
  const TensorRef& a;
  const TensorRef& b;
  const TensorRef& out;
  cudaStream_t stream;
  template <Kinds K, typename F>
  void run(const F& fn) const {
    binary_as<K>(fn, a, b, out, stream);
  }
};

struct ScalarOperand {
  const TensorRef& a;
  const ScalarArg& s;
  bool left;
  const TensorRef& out;
  cudaStream_t stream;
  template <Kinds K, typename F>
  void run(const F& fn) const {
    scalar_as<K>(fn, a, s, left, out, stream);
  }
};

}  // namespace

void launch_binary(Op op, const TensorRef& a, const TensorRef& b, const TensorRef& out,
                   cudaStream_t stream) {
  by_op(op, TensorOperand{a, b, out, stream});
}

void launch_binary_scalar(Op op, const TensorRef& a, const ScalarArg& s, bool scalar_left,
                          const TensorRef& out, cudaStream_t stream) {
  by_op(op, ScalarOperand{a, s, scalar_left, out, stream});
}

}  // namespace ruccl::cuda
