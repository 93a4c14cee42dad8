// CpuBackend::reduce: Sum, Mean, Prod, Max, Min over any set of dims (Argmax/Argmin live in
// cpu_reduce_arg.cpp, softmax in cpu_reduce_softmax.cpp).
//
// One engine serves every layout. The accumulator has out's shape (reduced dims of size 1); it is
// viewed with x's shape (stride 0 along reduced dims) and both views are reordered by x's strides,
// outermost first, so for_each_run walks x's memory in order. Each innermost run is then either
// reduced (accumulator stride 0: a pairwise, vectorised fold of a contiguous run, fast when
// reducing the innermost dim) or kept (accumulator stride != 0: acc[i] = r(acc[i], x[i]) over a
// whole row, so reducing dim 0 of [N, C] streams rows instead of striding down columns).
//
// Large inputs (>= kParallelMinElements) are split by rules that depend on the shape only, so the
// result is bit-identical for every thread count: when some kept dim has >= kMinKeptSplit
// elements, threads take disjoint chunks of the output (each output's order is unchanged);
// otherwise the outermost reduced dim is cut into fixed blocks of about kBlockElements elements,
// each block reduces into its own partial accumulator, and the partials are combined in block
// order.
#include <algorithm>
#include <cstdlib>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/cpu/cpu_reduce_kernels.h"
#include "tensor/backend/cpu/cpu_reduce_ops.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

constexpr std::int64_t kMinKeptSplit = 16;
constexpr std::int64_t kBlockElements = std::int64_t{1} << 15;
constexpr std::int64_t kMaxPartialOutputs = 4096;

// Dims of x ordered by descending |stride| (stable), i.e. outermost in memory first.
struct DimOrder {
  std::array<std::int64_t, Shape::kMaxDims> perm{};
  std::int64_t n = 0;
};

DimOrder order_by_strides(const Tensor& x) {
  DimOrder order;
  order.n = x.dim();
  for (std::int64_t i = 0; i < order.n; ++i) {
    std::int64_t j = i;
    const std::int64_t s = std::abs(x.strides()[i]);
    while (j > 0 && std::abs(x.strides()[order.perm[j - 1]]) < s) {
      order.perm[j] = order.perm[j - 1];
      --j;
    }
    order.perm[j] = i;
  }
  return order;
}

Tensor permuted(const Tensor& t, const DimOrder& order) {
  Shape shape = t.shape();
  Shape strides = t.strides();
  for (std::int64_t i = 0; i < order.n; ++i) {
    shape[i] = t.shape()[order.perm[i]];
    strides[i] = t.strides()[order.perm[i]];
  }
  return t.as_strided(shape, strides, t.offset());
}

template <typename T, typename A, typename R>
void run_serial(const Tensor& x, const Tensor& acc, R r) {
  for_each_run<2>(x.shape(), {&acc, &x},
                  [r](const StridedRun<2>& run) { reduce_run<A, T>(run, r); });
}

// acc (contiguous, out's shape, holding R's identity) = r-fold of x over the dims where acc has
// size 1.
template <typename T, typename A, typename R>
void reduce_into(const Tensor& x, const Tensor& acc, R r) {
  const DimOrder order = order_by_strides(x);
  const Tensor xg = permuted(x, order);
  const Tensor ag = permuted(acc.expand(x.shape()), order);
  const std::int64_t numel = x.numel();
  if (numel < kParallelMinElements) return run_serial<T, A>(xg, ag, r);
  const Shape& shape = xg.shape();
  for (std::int64_t d = 0; d < shape.size(); ++d) {  // split disjoint outputs
    if (ag.strides()[d] == 0 || shape[d] < kMinKeptSplit) continue;
    const int threads = threads_for(numel);
    if (threads <= 1) return run_serial<T, A>(xg, ag, r);
    const std::int64_t step = (shape[d] + threads - 1) / threads;
    parallel_for(threads, threads, [&](std::int64_t c) {
      const std::int64_t start = c * step;
      const std::int64_t length = std::min(step, shape[d] - start);
      if (length > 0) run_serial<T, A>(xg.narrow(d, start, length), ag.narrow(d, start, length), r);
    });
    return;
  }
  for (std::int64_t d = 0; d < shape.size(); ++d) {  // fixed blocks of a reduced dim
    if (ag.strides()[d] != 0 || shape[d] < 2) continue;
    const std::int64_t inner = numel / shape[d];
    const std::int64_t len = std::max<std::int64_t>(1, (kBlockElements + inner - 1) / inner);
    const std::int64_t blocks = (shape[d] + len - 1) / len;
    if (blocks < 2 || acc.numel() > kMaxPartialOutputs) break;
    Shape partial_shape = acc.shape();
    partial_shape.insert(0, blocks);
    const Tensor partial = Tensor::empty(partial_shape, acc.dtype(), acc.device());
    {
      A* p = static_cast<A*>(partial.data_ptr());
      std::fill(p, p + partial.numel(), R::template identity<A>());
    }
    parallel_for(blocks, threads_for(numel), [&](std::int64_t b) {
      const std::int64_t start = b * len;
      const std::int64_t length = std::min(len, shape[d] - start);
      const Tensor pb = permuted(partial.select(0, b).expand(x.shape()), order);
      run_serial<T, A>(xg.narrow(d, start, length), pb.narrow(d, start, length), r);
    });
    for (std::int64_t b = 0; b < blocks; ++b) {  // combine in block order
      const Tensor pb = partial.select(0, b);
      for_each_run<2>(acc.shape(), {&acc, &pb},
                      [r](const StridedRun<2>& run) { reduce_run<A, A>(run, r); });
    }
    return;
  }
  run_serial<T, A>(xg, ag, r);
}

DType acc_dtype(Op op, DType x) {
  if (op == Op::Max || op == Op::Min) {
    return x == DType::F16 || x == DType::BF16 ? DType::F32 : x;
  }
  return is_floating(x) ? DType::F64 : DType::I64;
}

template <typename T, typename A, typename R>
void reduce_typed(const Tensor& x, const Tensor& acc, R r) {
  A* p = static_cast<A*>(acc.data_ptr());
  std::fill(p, p + acc.numel(), R::template identity<A>());
  reduce_into<T, A>(x, acc, r);
}

}  // namespace

void CpuBackend::reduce(Op op, const Tensor& x, std::span<const std::int64_t> dims,
                        const Tensor& out) {
  RUCCL_CHECK(supports(op, x.dtype()), NotImplementedError, "not implemented: cpu::", op_name(op),
              " for dtype ", x.dtype());
  RUCCL_ASSERT(out.dim() == x.dim(), "cpu::", op_name(op));
  for (std::int64_t d = 0, k = 0; d < x.dim(); ++d) {
    const bool reduced = k < static_cast<std::int64_t>(dims.size()) && dims[k] == d;
    if (reduced) ++k;
    RUCCL_ASSERT(out.shape()[d] == (reduced ? 1 : x.shape()[d]), "cpu::", op_name(op), " out ",
                 out.shape(), " for x ", x.shape());
  }
  if (op == Op::Argmax || op == Op::Argmin) {
    RUCCL_ASSERT(dims.size() == 1 && out.dtype() == DType::I64);
    arg_reduce(op, x, dims[0], out);
    return;
  }
  const DType acc_dt = acc_dtype(op, x.dtype());
  const bool direct = out.dtype() == acc_dt && out.is_contiguous();
  const Tensor acc = direct ? out : Tensor::empty(out.shape(), acc_dt, out.device());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case Op::Sum:
      case Op::Mean:
        return reduce_typed<T, SumAcc<T>>(x, acc, SumReduce{});
      case Op::Prod:
        return reduce_typed<T, SumAcc<T>>(x, acc, ProdReduce{});
      case Op::Max:
        return reduce_typed<T, MaxAcc<T>>(x, acc, MaxReduce{});
      case Op::Min:
        return reduce_typed<T, MaxAcc<T>>(x, acc, MinReduce{});
      default:
        RUCCL_ASSERT(false, "cpu::reduce: unexpected op ", op_name(op));
    }
  });
  if (op == Op::Mean && acc.numel() > 0) {
    RUCCL_ASSERT(acc.dtype() == DType::F64);
    const double count = static_cast<double>(x.numel() / acc.numel());
    double* p = static_cast<double*>(acc.data_ptr());
    for (std::int64_t i = 0; i < acc.numel(); ++i) p[i] /= count;
  }
  if (!direct) copy(acc, out);
}

}  // namespace ruccl::cpu
