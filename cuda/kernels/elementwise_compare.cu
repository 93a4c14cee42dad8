// Comparisons and logical ops (out is Bool), with a tensor or a scalar operand, and where.
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/elementwise_ops.cuh"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

namespace {

template <typename Visit>
void by_op(Op op, Visit&& visit) {
  switch (op) {
    case Op::Eq:
      return visit.template run<Kinds::kAll>(EqFn{});
    case Op::Ne:
      return visit.template run<Kinds::kAll>(NeFn{});
    case Op::Lt:
      return visit.template run<Kinds::kAll>(LtFn{});
    case Op::Le:
      return visit.template run<Kinds::kAll>(LeFn{});
    case Op::Gt:
      return visit.template run<Kinds::kAll>(GtFn{});
    case Op::Ge:
      return visit.template run<Kinds::kAll>(GeFn{});
    case Op::LogicalAnd:
      return visit.template run<Kinds::kBool>(LogicalAndFn{});
    case Op::LogicalOr:
      return visit.template run<Kinds::kBool>(LogicalOrFn{});
    default:
      break;
  }
  throw NotImplementedError(str("not implemented: cuda::compare for op ", op_name(op)));
}

struct TensorOperand {
  const TensorRef& a;
  const TensorRef& b;
  const TensorRef& out;
  cudaStream_t stream;
  template <Kinds K, typename F>
  void run(const F& fn) const {
    dispatch<K>(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      launch_elementwise<bool, T, T>(fn, out, a, &b, nullptr, stream);
    });
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
    dispatch<K>(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      using C = Compute<T>;
      const C value = to_compute(from_compute<T>(s.as<C>()));
      if (left) {
        launch_elementwise<bool, T>(WithScalar<F, C, true>{fn, value}, out, a, nullptr, nullptr,
                                    stream);
      } else {
        launch_elementwise<bool, T>(WithScalar<F, C, false>{fn, value}, out, a, nullptr, nullptr,
                                    stream);
      }
    });
  }
};

struct SelectFn {
  template <typename C>
  __device__ __forceinline__ C operator()(bool c, C x, C y) const {
    return c ? x : y;
  }
};

}  // namespace

void launch_compare(Op op, const TensorRef& a, const TensorRef& b, const TensorRef& out,
                    cudaStream_t stream) {
  by_op(op, TensorOperand{a, b, out, stream});
}

void launch_compare_scalar(Op op, const TensorRef& a, const ScalarArg& s, bool scalar_left,
                           const TensorRef& out, cudaStream_t stream) {
  by_op(op, ScalarOperand{a, s, scalar_left, out, stream});
}

void launch_where(const TensorRef& cond, const TensorRef& a, const TensorRef& b,
                  const TensorRef& out, cudaStream_t stream) {
  dispatch<Kinds::kAll>(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<T, bool, T, T>(SelectFn{}, out, cond, &a, &b, stream);
  });
}

}  // namespace ruccl::cuda
