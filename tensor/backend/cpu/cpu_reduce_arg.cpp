// Argmax/Argmin: the reduced dim is moved last (a view), then each output scans its row in order,
// with the row's own element stride; rows run in parallel. No copy: an arg-max over an outer dim
// (max pooling's over the window offsets of its unfolded [kh kw, N C oh ow] input) reads each
// row's elements in place, and consecutive outputs read consecutive addresses of every row.
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/cpu/cpu_reduce_kernels.h"
#include "tensor/backend/cpu/cpu_reduce_ops.h"

namespace ruccl::cpu {

namespace {

// Index of the first extreme value of row[0], row[step], ... (n of them), or of the first NaN.
template <typename T, bool kMax>
std::int64_t scan_row(const T* row, std::int64_t n, std::int64_t step) {
  Compute<T> best = load(row[0]);
  if (best != best) return 0;  // NOLINT(misc-redundant-expression): NaN test
  std::int64_t index = 0;
  for (std::int64_t i = 1; i < n; ++i) {
    const Compute<T> v = load(row[i * step]);
    if (v != v) return i;  // NOLINT(misc-redundant-expression)
    if (kMax ? v > best : v < best) {
      best = v;
      index = i;
    }
  }
  return index;
}

}  // namespace

void arg_reduce(Op op, const Tensor& x, std::int64_t dim, const Tensor& out) {
  const std::int64_t last = x.dim() - 1;
  const Tensor xt = x.transpose(dim, last);
  const std::int64_t n = xt.shape()[last];
  RUCCL_CHECK(n > 0, IndexError, op_name(op), ": expected a non-empty dim ", dim, ", got shape ",
              x.shape());
  const std::int64_t step = xt.strides()[last];
  const Tensor ot = out.transpose(dim, last);
  const Tensor x0 = xt.narrow(last, 0, 1);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      auto kernel = [n, step, is_max = op == Op::Argmax](const StridedRun<2>& r) {
        for (std::int64_t k = 0; k < r.n; ++k) {
          const T* row = reinterpret_cast<const T*>(r.ptr[1] + k * r.stride[1]);
          const std::int64_t index =
              is_max ? scan_row<T, true>(row, n, step) : scan_row<T, false>(row, n, step);
          store_at<std::int64_t>(r.ptr[0] + k * r.stride[0], index);
        }
      };
      parallel_for_each_run<2>(ot.shape(), {&ot, &x0}, kernel, x.numel());
    }
  });
}

}  // namespace ruccl::cpu
