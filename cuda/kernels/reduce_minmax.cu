// Max and Min over any set of dims (reduce_impl.cuh), NaN-propagating like the CPU backend.
#include "cuda/kernels/reduce_impl.cuh"

namespace ruccl::cuda {

void launch_reduce_minmax(Op op, const TensorRef& x, const bool* reduced, const TensorRef& out,
                          Device device, cudaStream_t stream) {
  using namespace reduce_detail;
  const bool done = dispatch<Kinds::kAll>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (op == Op::Max) {
      reduce_typed<T, MaxAcc<T>>(x, reduced, out, MaxReduce{}, Finish{}, device, stream);
    } else {
      reduce_typed<T, MaxAcc<T>>(x, reduced, out, MinReduce{}, Finish{}, device, stream);
    }
  });
  RUCCL_ASSERT(done && (op == Op::Max || op == Op::Min), op_name(op));
}

}  // namespace ruccl::cuda
