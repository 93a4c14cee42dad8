// Sum, Mean and Prod over any set of dims (reduce_impl.cuh).
#include "cuda/kernels/reduce_impl.cuh"

namespace ruccl::cuda {

void launch_reduce_sum(Op op, const TensorRef& x, const bool* reduced, const TensorRef& out,
                       Device device, cudaStream_t stream) {
  using namespace reduce_detail;
  Finish finish;
  if (op == Op::Mean && out.numel() > 0) {
    finish.mean = true;
    finish.divisor = static_cast<double>(x.numel() / out.numel());
  }
  const bool done = dispatch<Kinds::kAll>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (op == Op::Prod) {
      reduce_typed<T, SumAcc<T>>(x, reduced, out, ProdReduce{}, finish, device, stream);
    } else {
      reduce_typed<T, SumAcc<T>>(x, reduced, out, SumReduce{}, finish, device, stream);
    }
  });
  RUCCL_ASSERT(done && (op == Op::Sum || op == Op::Mean || op == Op::Prod), op_name(op));
}

}  // namespace ruccl::cuda
