// CpuBackend::softmax: Softmax and LogSoftmax along one dim, numerically stable:
//   m = max_i x_i (NaN propagates),  s = sum_i exp(x_i - m) (accumulated in double; F32's exp
//   is cpu_vector_math.h's exp_f32),
//   softmax_i = exp(x_i - m) / s,    log_softmax_i = (x_i - m) - log(s).
// x is viewed as [outer, n, inner] (made contiguous first). With inner == 1 each row is a
// contiguous run; otherwise the three passes run over blocks of kColumns columns, streaming the
// n rows of each block, so a softmax over an outer dim never strides down a column.
#include <algorithm>
#include <cmath>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/cpu/cpu_reduce_kernels.h"
#include "tensor/backend/cpu/cpu_vector_math.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

constexpr std::int64_t kColumns = 256;
// Rows per parallel task: enough work (elements) to amortise claiming a task.
constexpr std::int64_t kTaskElements = 4096;

template <typename T, bool kLog>
void softmax_row(const T* x, T* out, std::int64_t n) {
  using C = Compute<T>;
  const C m = reduce_contiguous<C>(x, n, MaxReduce{});
  if constexpr (!kIsReducedFloat<T>) {
    // The exponentials first (a loop the compiler vectorises: fast_exp is branch-free), then
    // their sum in kLanes partial sums of double (one serial sum would keep it scalar).
    constexpr std::int64_t kLanes = 8;
    for (std::int64_t i = 0; i < n; ++i) out[i] = fast_exp(x[i] - m);
    double lanes[kLanes] = {};
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(out[i + j]);
    }
    for (std::int64_t j = 0; i + j < n; ++j) lanes[j] += static_cast<double>(out[i + j]);
    double s = 0.0;
    for (const double l : lanes) s += l;
    if constexpr (kLog) {
      const C log_s = static_cast<C>(std::log(s));
      for (std::int64_t k = 0; k < n; ++k) out[k] = (x[k] - m) - log_s;
    } else {
      const C sc = static_cast<C>(s);
      for (std::int64_t k = 0; k < n; ++k) out[k] = out[k] / sc;
    }
  } else {
    double s = 0.0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(fast_exp(load(x[i]) - m));
    const C sc = static_cast<C>(s);
    if constexpr (kLog) {
      const C log_s = static_cast<C>(std::log(s));
      for (std::int64_t i = 0; i < n; ++i) out[i] = store<T>((load(x[i]) - m) - log_s);
    } else {
      for (std::int64_t i = 0; i < n; ++i) out[i] = store<T>(fast_exp(load(x[i]) - m) / sc);
    }
  }
}

// Softmax over the middle dim of one [n, inner] slab, columns [c0, c0 + w).
template <typename T, bool kLog>
void softmax_columns(const T* x, T* out, std::int64_t n, std::int64_t inner, std::int64_t c0,
                     std::int64_t w) {
  using C = Compute<T>;
  C m[kColumns];
  double s[kColumns];
  for (std::int64_t j = 0; j < w; ++j) {
    m[j] = MaxReduce::identity<C>();
    s[j] = 0.0;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = x + i * inner + c0;
    for (std::int64_t j = 0; j < w; ++j) m[j] = MaximumFn{}(m[j], load(row[j]));
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = x + i * inner + c0;
    for (std::int64_t j = 0; j < w; ++j) s[j] += static_cast<double>(fast_exp(load(row[j]) - m[j]));
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = x + i * inner + c0;
    T* orow = out + i * inner + c0;
    for (std::int64_t j = 0; j < w; ++j) {
      const C v = load(row[j]) - m[j];
      orow[j] = kLog ? store<T>(v - static_cast<C>(std::log(s[j])))
                     : store<T>(fast_exp(v) / static_cast<C>(s[j]));
    }
  }
}

template <typename T, bool kLog>
void softmax_typed(const T* x, T* out, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  const std::int64_t numel = outer * n * inner;
  const int threads = threads_for(numel);
  if (inner == 1) {
    const std::int64_t rows_per_task = std::max<std::int64_t>(1, kTaskElements / n);
    const std::int64_t tasks = (outer + rows_per_task - 1) / rows_per_task;
    parallel_for(tasks, threads, [&](std::int64_t t) {
      const std::int64_t end = std::min(outer, (t + 1) * rows_per_task);
      for (std::int64_t o = t * rows_per_task; o < end; ++o) {
        softmax_row<T, kLog>(x + o * n, out + o * n, n);
      }
    });
    return;
  }
  const std::int64_t blocks = (inner + kColumns - 1) / kColumns;
  parallel_for(outer * blocks, threads, [&](std::int64_t t) {
    const std::int64_t o = t / blocks;
    const std::int64_t c0 = (t % blocks) * kColumns;
    softmax_columns<T, kLog>(x + o * n * inner, out + o * n * inner, n, inner, c0,
                             std::min(kColumns, inner - c0));
  });
}

}  // namespace

void CpuBackend::softmax(Op op, const Tensor& x, std::int64_t dim, const Tensor& out) {
  RUCCL_CHECK(supports(op, x.dtype()), NotImplementedError, "not implemented: cpu::", op_name(op),
              " for dtype ", x.dtype());
  RUCCL_ASSERT((op == Op::Softmax || op == Op::LogSoftmax) && x.shape() == out.shape() &&
               x.dtype() == out.dtype() && dim >= 0 && dim < x.dim());
  if (x.numel() == 0) return;
  const Tensor xc = x.contiguous();
  const Tensor oc =
      out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::int64_t d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (std::int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  const std::int64_t n = x.shape()[dim];
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsReducedFloat<T> || std::is_floating_point_v<T>) {
      const T* xp = static_cast<const T*>(xc.data_ptr());
      T* op_out = static_cast<T*>(oc.data_ptr());
      if (op == Op::LogSoftmax) {
        softmax_typed<T, true>(xp, op_out, outer, n, inner);
      } else {
        softmax_typed<T, false>(xp, op_out, outer, n, inner);
      }
    }
  });
  if (!out.is_contiguous()) copy(oc, out);
}

}  // namespace ruccl::cpu
