// CpuBackend's batch-norm passes (Backend::batch_norm_stats, _elemt, _backward_reduce,
// _backward_elemt). x [N, C, ...] is read as [N, C, S] (S: the product of the dims after the
// channel): channel c is N contiguous runs of S elements, S * C apart. The reductions split into
// one task per channel, each summing its runs in order into lanes of double (kLanes partial sums,
// added up at the end: the order depends on the shape alone, never on the thread count); the
// element-wise passes into tasks of whole images, one run of S per channel.
#include <array>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

/// Independent partial sums per run: lets the compiler keep one vector of doubles per step
/// (without them each add would wait for the one before, as IEEE order requires).
constexpr std::int64_t kLanes = 8;

/// [N, C, S] view of a contiguous x [N, C, ...].
struct ChannelLayout {
  std::int64_t n;
  std::int64_t c;
  std::int64_t s;
};

ChannelLayout layout_of(const Tensor& x) {
  const Shape& shape = x.shape();
  std::int64_t s = 1;
  for (std::int64_t d = 2; d < shape.size(); ++d) s *= shape[d];
  return {shape[0], shape[1], s};
}

/// Σ f(i) for i < count, in kLanes interleaved partial sums of double.
template <typename F>
double lane_sum(std::int64_t count, const F& f) {
  std::array<double, kLanes> acc{};
  std::int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (std::int64_t j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  }
  for (std::int64_t j = 0; i + j < count; ++j) acc[j] += f(i + j);
  double total = 0.0;
  for (const double a : acc) total += a;
  return total;
}

void check_dtype(const Backend& backend, DType dtype) {
  RUCCL_CHECK(backend.supports(Op::BatchNorm, dtype), NotImplementedError,
              "not implemented: cpu::batch_norm for dtype ", dtype);
}

/// Runs task(channel) for every channel, on as many threads as x's size warrants.
template <typename F>
void for_each_channel(const ChannelLayout& l, const F& task) {
  parallel_for(l.c, threads_for(l.n * l.c * l.s), task);
}

/// Runs task(n, c) for every (image, channel) run of S elements, in tasks of whole images.
template <typename F>
void for_each_plane(const ChannelLayout& l, const F& task) {
  parallel_for(l.n, threads_for(l.n * l.c * l.s), [&](std::int64_t n) {
    for (std::int64_t c = 0; c < l.c; ++c) task(n, c);
  });
}

template <typename T>
void stats_typed(const Tensor& x, const Tensor& mean, const Tensor& var) {
  const ChannelLayout l = layout_of(x);
  const T* src = x.data<T>();
  T* mean_out = mean.data<T>();
  T* var_out = var.data<T>();
  const auto count = static_cast<double>(l.n * l.s);
  for_each_channel(l, [&](std::int64_t c) {
    double sum = 0.0;
    for (std::int64_t n = 0; n < l.n; ++n) {
      const T* run = src + (n * l.c + c) * l.s;
      sum += lane_sum(l.s, [run](std::int64_t i) { return static_cast<double>(run[i]); });
    }
    const double m = sum / count;
    double squares = 0.0;
    for (std::int64_t n = 0; n < l.n; ++n) {
      const T* run = src + (n * l.c + c) * l.s;
      squares += lane_sum(l.s, [run, m](std::int64_t i) {
        const double d = static_cast<double>(run[i]) - m;
        return d * d;
      });
    }
    mean_out[c] = static_cast<T>(m);
    var_out[c] = static_cast<T>(squares / count);
  });
}

template <typename T>
void elemt_typed(const Tensor& x, const Tensor& scale, const Tensor& shift, const Tensor& out) {
  const ChannelLayout l = layout_of(x);
  const T* src = x.data<T>();
  const T* sc = scale.data<T>();
  const T* sh = shift.data<T>();
  T* dst = out.data<T>();
  if (l.s == 1) {  // [N, C]: one row per image, the channels contiguous (layer_norm's affine)
    parallel_for(l.n, threads_for(l.n * l.c), [&](std::int64_t n) {
      const T* in = src + n * l.c;
      T* o = dst + n * l.c;
      for (std::int64_t c = 0; c < l.c; ++c) o[c] = in[c] * sc[c] + sh[c];
    });
    return;
  }
  for_each_plane(l, [&](std::int64_t n, std::int64_t c) {
    const std::int64_t offset = (n * l.c + c) * l.s;
    const T* in = src + offset;
    T* o = dst + offset;
    const T a = sc[c];
    const T b = sh[c];
    for (std::int64_t i = 0; i < l.s; ++i) o[i] = in[i] * a + b;
  });
}

template <typename T>
void backward_reduce_typed(const Tensor& dy, const Tensor& x, const Tensor& mean,
                           const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  const ChannelLayout l = layout_of(x);
  const T* g = dy.data<T>();
  const T* src = x.data<T>();
  const T* m = mean.data<T>();
  T* sum_out = sum_dy.data<T>();
  T* dot_out = sum_dy_xmu.data<T>();
  for_each_channel(l, [&](std::int64_t c) {
    const auto mc = static_cast<double>(m[c]);
    double sum = 0.0;
    double dot = 0.0;
    for (std::int64_t n = 0; n < l.n; ++n) {
      const std::int64_t offset = (n * l.c + c) * l.s;
      const T* gr = g + offset;
      const T* xr = src + offset;
      sum += lane_sum(l.s, [gr](std::int64_t i) { return static_cast<double>(gr[i]); });
      dot += lane_sum(l.s, [gr, xr, mc](std::int64_t i) {
        return static_cast<double>(gr[i]) * (static_cast<double>(xr[i]) - mc);
      });
    }
    sum_out[c] = static_cast<T>(sum);
    dot_out[c] = static_cast<T>(dot);
  });
}

template <typename T>
void backward_elemt_typed(const Tensor& dy, const Tensor& x, const Tensor& mean,
                          const Tensor& mean_dy, const Tensor& proj, const Tensor& scale,
                          const Tensor& dx) {
  const ChannelLayout l = layout_of(x);
  const T* g = dy.data<T>();
  const T* src = x.data<T>();
  const T* m = mean.data<T>();
  const T* mg = mean_dy.data<T>();
  const T* p = proj.data<T>();
  const T* sc = scale.data<T>();
  T* dst = dx.data<T>();
  for_each_plane(l, [&](std::int64_t n, std::int64_t c) {
    const std::int64_t offset = (n * l.c + c) * l.s;
    const T* gr = g + offset;
    const T* xr = src + offset;
    T* o = dst + offset;
    const T mc = m[c];
    const T mgc = mg[c];
    const T pc = p[c];
    const T sc_c = sc[c];
    for (std::int64_t i = 0; i < l.s; ++i) o[i] = (gr[i] - mgc - (xr[i] - mc) * pc) * sc_c;
  });
}

/// Calls f(T{}) with T float for F32 and double for F64 (the only dtypes supported).
template <typename F>
void visit_floating(DType dtype, const F& f) {
  if (dtype == DType::F32) {
    f(float{});
  } else {
    f(double{});
  }
}

}  // namespace

void CpuBackend::batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  check_dtype(*this, x.dtype());
  RUCCL_ASSERT(x.is_contiguous() && mean.is_contiguous() && var.is_contiguous());
  if (x.numel() == 0) return;
  visit_floating(x.dtype(), [&](auto t) { stats_typed<decltype(t)>(x, mean, var); });
}

void CpuBackend::batch_norm_elemt(const Tensor& x, const Tensor& scale, const Tensor& shift,
                                  const Tensor& out) {
  check_dtype(*this, x.dtype());
  RUCCL_ASSERT(x.is_contiguous() && out.is_contiguous() && scale.is_contiguous() &&
               shift.is_contiguous());
  if (x.numel() == 0) return;
  visit_floating(x.dtype(), [&](auto t) { elemt_typed<decltype(t)>(x, scale, shift, out); });
}

void CpuBackend::batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                            const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  check_dtype(*this, x.dtype());
  RUCCL_ASSERT(dy.is_contiguous() && x.is_contiguous() && mean.is_contiguous() &&
               sum_dy.is_contiguous() && sum_dy_xmu.is_contiguous());
  if (x.numel() == 0) return;
  visit_floating(x.dtype(), [&](auto t) {
    backward_reduce_typed<decltype(t)>(dy, x, mean, sum_dy, sum_dy_xmu);
  });
}

void CpuBackend::batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                           const Tensor& mean_dy, const Tensor& proj,
                                           const Tensor& scale, const Tensor& dx) {
  check_dtype(*this, x.dtype());
  RUCCL_ASSERT(dy.is_contiguous() && x.is_contiguous() && dx.is_contiguous());
  if (x.numel() == 0) return;
  visit_floating(x.dtype(), [&](auto t) {
    backward_elemt_typed<decltype(t)>(dy, x, mean, mean_dy, proj, scale, dx);
  });
}

}  // namespace ruccl::cpu
