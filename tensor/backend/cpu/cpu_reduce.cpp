// CpuBackend::reduce: Sum, Mean, Prod, Max, Min over any set of dims (Argmax/Argmin live in
// cpu_reduce_arg.cpp, softmax in cpu_reduce_softmax.cpp).
//
// One engine serves every layout. The accumulator has out's shape (reduced dims of size 1); it is
// viewed with x's shape (stride 0 along reduced dims) and both views are reordered by x's strides,
// outermost first, so for_each_run walks x's memory in order. Each innermost run is then either
// reduced (accumulator stride 0: a pairwise, vectorised fold of a contiguous run, fast when
// reducing the innermost dim) or kept (accumulator stride != 0: acc[i] = r(acc[i], x[i]) over a
// whole row, so reducing dim 0 of [N, C] streams rows instead of striding down columns; see
// sum_rows_blocked for the float case).
//
// Large inputs (>= kParallelMinElements) are split by rules that depend on the shape only, so the
// result is bit-identical for every thread count: a contiguous input reduced to one value is cut
// into fixed blocks of kFlatBlock elements whose sums are combined in order; when some kept dim has
// >= kMinKeptSplit elements, threads take disjoint chunks of the output (each output's order is
// unchanged); otherwise the outermost reduced dim is cut into fixed blocks of about kBlockElements
// elements, each block reduces into its own partial accumulator, and the partials are combined in
// block order.
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
constexpr std::int64_t kBlockElements = std::int64_t{1} << 17;
constexpr std::int64_t kFlatBlock = std::int64_t{1} << 16;
constexpr std::int64_t kMaxPartialOutputs = 4096;
constexpr std::int64_t kRowBlock = 64;
constexpr std::int64_t kRowBlocks = 8;

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

// Drops size-1 dims and merges neighbours that are contiguous for both x and acc (dims already
// ordered outermost first), so the innermost dim is the whole innermost run of for_each_run.
void merge_geometry(Tensor& x, Tensor& acc) {
  Shape shape;
  Shape xs;
  Shape as;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    const std::int64_t n = x.shape()[d];
    if (n == 1) continue;
    const std::int64_t k = shape.size() - 1;
    if (k >= 0 && xs[k] == x.strides()[d] * n && as[k] == acc.strides()[d] * n) {
      shape[k] *= n;
      xs[k] = x.strides()[d];
      as[k] = acc.strides()[d];
    } else {
      shape.push_back(n);
      xs.push_back(x.strides()[d]);
      as.push_back(acc.strides()[d]);
    }
  }
  x = x.as_strided(shape, xs, x.offset());
  acc = acc.as_strided(shape, as, acc.offset());
}

template <typename T, typename A, typename R>
void run_serial(const Tensor& x, const Tensor& acc, R r) {
  for_each_run<2>(x.shape(), {&acc, &x},
                  [r](const StridedRun<2>& run) { reduce_run<A, T>(run, r); });
}

// Sum over dim 0 of a 2-d [R, C] x (rows contiguous) into a double row acc, for float-sized
// inputs: rows are added into a float row in blocks of kRowBlock, and each block's float row is
// then added into acc. A double row read and written for every input row costs 3x the memory
// traffic of the input row and falls out of L1/L2 for long rows; this keeps the accuracy of double
// accumulation (each float partial sums at most kRowBlock values) at float speed. The block
// boundaries depend only on the row index, so any split of the columns gives the same result.
template <typename T>
void sum_rows_blocked(const Tensor& x, const Tensor& acc) {
  const std::int64_t rows = x.shape()[0];
  const std::int64_t cols = x.shape()[1];
  const std::int64_t row_stride = x.strides()[0];
  const T* xp = static_cast<const T*>(x.data_ptr());
  double* ap = static_cast<double*>(acc.data_ptr());
  const Tensor block = Tensor::empty(Shape{cols}, DType::F32, x.device());
  float* bp = static_cast<float*>(block.data_ptr());
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    std::fill(bp, bp + cols, 0.0f);
    const std::int64_t r1 = std::min(rows, r0 + kRowBlock);
    for (std::int64_t r = r0; r < r1; ++r) {
      accumulate_row<float, T>(bp, xp + r * row_stride, cols, SumReduce{});
    }
    accumulate_row<double, float>(ap, bp, cols, SumReduce{});
  }
}

// run_serial, or sum_rows_blocked when it applies (merged geometry [R, C], R reduced).
template <typename T, typename A, typename R>
void run_rows(const Tensor& x, const Tensor& acc, R r) {
  if constexpr (std::is_same_v<R, SumReduce> && std::is_same_v<A, double> &&
                (std::is_same_v<T, float> || kIsReducedFloat<T>)) {
    if (x.dim() == 2 && acc.strides()[0] == 0 && acc.strides()[1] == 1 && x.strides()[1] == 1 &&
        x.shape()[0] > 1) {
      return sum_rows_blocked<T>(x, acc);
    }
  }
  run_serial<T, A>(x, acc, r);
}

// acc (contiguous, out's shape, holding R's identity) = r-fold of x over the dims where acc has
// size 1.
template <typename T, typename A, typename R>
void reduce_into(const Tensor& x, const Tensor& acc, R r) {
  const std::int64_t numel = x.numel();
  if (numel == 0) return;
  if (numel >= kParallelMinElements && acc.numel() == 1 && flat_stride(x) == 1) {
    // One contiguous run into one output: fixed blocks of kFlatBlock, combined in block order.
    const T* p = static_cast<const T*>(x.data_ptr());
    const std::int64_t blocks = (numel + kFlatBlock - 1) / kFlatBlock;
    const Tensor partial = Tensor::empty(Shape{blocks}, acc.dtype(), acc.device());
    A* pp = static_cast<A*>(partial.data_ptr());
    parallel_for(blocks, threads_for(numel), [&](std::int64_t b) {
      const std::int64_t start = b * kFlatBlock;
      pp[b] = reduce_contiguous<A>(p + start, std::min(kFlatBlock, numel - start), r);
    });
    A* out = static_cast<A*>(acc.data_ptr());
    for (std::int64_t b = 0; b < blocks; ++b) *out = r(*out, pp[b]);
    return;
  }
  const DimOrder order = order_by_strides(x);
  Tensor xg = permuted(x, order);
  Tensor ag = permuted(acc.expand(x.shape()), order);
  merge_geometry(xg, ag);
  if (numel < kParallelMinElements) return run_rows<T, A>(xg, ag, r);
  const Shape& shape = xg.shape();
  // Cutting the innermost (contiguous) kept dim would leave each thread short pieces of every row,
  // which breaks the one sequential stream a reduction over outer rows reads ([4096, 4096] over dim
  // 0: 35 GB/s on one thread, 22 GB/s cut in two). When the outputs are few enough for partial
  // accumulators, the reduced-dim blocks below are taken instead. Shape-only: every thread count
  // takes the same path.
  const std::int64_t last = shape.size() - 1;
  const bool keep_rows_whole = last > 0 && ag.strides()[last] != 0 && xg.strides()[last] == 1 &&
                               acc.numel() <= kMaxPartialOutputs;
  for (std::int64_t d = 0; d < shape.size(); ++d) {  // split disjoint outputs
    if (ag.strides()[d] == 0 || shape[d] < kMinKeptSplit) continue;
    if (d == last && keep_rows_whole) break;
    const int threads = threads_for(numel);
    if (threads <= 1) return run_rows<T, A>(xg, ag, r);
    const std::int64_t step = (shape[d] + threads - 1) / threads;
    parallel_for(threads, threads, [&](std::int64_t c) {
      const std::int64_t start = c * step;
      const std::int64_t length = std::min(step, shape[d] - start);
      if (length > 0) run_rows<T, A>(xg.narrow(d, start, length), ag.narrow(d, start, length), r);
    });
    return;
  }
  for (std::int64_t d = 0; d < shape.size(); ++d) {  // fixed blocks of a reduced dim
    if (ag.strides()[d] != 0 || shape[d] < 2) continue;
    const std::int64_t inner = numel / shape[d];
    std::int64_t len = std::max<std::int64_t>(1, (kBlockElements + inner - 1) / inner);
    // Whole rows: at most kRowBlocks blocks, so the partial rows stay few (8 x acc).
    if (keep_rows_whole) len = std::max(len, (shape[d] + kRowBlocks - 1) / kRowBlocks);
    const std::int64_t blocks = (shape[d] + len - 1) / len;
    if (blocks < 2 || acc.numel() > kMaxPartialOutputs) break;
    // Block b accumulates into partial[b], laid out like acc (so ag's strides apply to it).
    const Tensor partial = Tensor::empty(Shape{blocks, acc.numel()}, acc.dtype(), acc.device());
    {
      A* p = static_cast<A*>(partial.data_ptr());
      std::fill(p, p + partial.numel(), R::template identity<A>());
    }
    parallel_for(blocks, threads_for(numel), [&](std::int64_t b) {
      const std::int64_t start = b * len;
      const std::int64_t length = std::min(len, shape[d] - start);
      const Tensor pb = partial.as_strided(shape, ag.strides(), b * acc.numel());
      run_rows<T, A>(xg.narrow(d, start, length), pb.narrow(d, start, length), r);
    });
    const Tensor flat_acc = acc.reshape(Shape{acc.numel()});
    for (std::int64_t b = 0; b < blocks; ++b) {  // combine in block order
      const Tensor pb = partial.select(0, b);
      for_each_run<2>(flat_acc.shape(), {&flat_acc, &pb},
                      [r](const StridedRun<2>& run) { reduce_run<A, A>(run, r); });
    }
    return;
  }
  run_rows<T, A>(xg, ag, r);
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

template <typename A, typename T, typename R>
A reduce_flat(const T* p, std::int64_t n, R r) {
  return r(R::template identity<A>(), reduce_contiguous<A>(p, n, r));
}

// Writes `value` into the one element of `out`, converted to out's dtype as copy() would.
template <typename A>
void write_scalar(const Tensor& out, A value) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using O = decltype(tag);
    O v;
    if constexpr (kIsReducedFloat<O>) {
      v = O(static_cast<float>(value));
    } else if constexpr (std::is_same_v<O, bool>) {
      v = value != A{};
    } else {
      v = static_cast<O>(value);
    }
    store_at<O>(static_cast<char*>(out.data_ptr()), v);
  });
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
  if (out.numel() == 1 && x.numel() > 0 && x.numel() < kParallelMinElements &&
      flat_stride(x) == 1) {
    // A small contiguous input reduced to one value: the engine's result (one pairwise run
    // folded into the identity) without building views or a separate accumulator.
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = static_cast<const T*>(x.data_ptr());
      switch (op) {
        case Op::Sum:
          return write_scalar(out, reduce_flat<SumAcc<T>>(p, x.numel(), SumReduce{}));
        case Op::Mean:
          return write_scalar(out, reduce_flat<SumAcc<T>>(p, x.numel(), SumReduce{}) /
                                       static_cast<double>(x.numel()));
        case Op::Prod:
          return write_scalar(out, reduce_flat<SumAcc<T>>(p, x.numel(), ProdReduce{}));
        case Op::Max:
          return write_scalar(out, reduce_flat<MaxAcc<T>>(p, x.numel(), MaxReduce{}));
        case Op::Min:
          return write_scalar(out, reduce_flat<MaxAcc<T>>(p, x.numel(), MinReduce{}));
        default:
          RUCCL_ASSERT(false, "cpu::reduce: unexpected op ", op_name(op));
      }
    });
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
