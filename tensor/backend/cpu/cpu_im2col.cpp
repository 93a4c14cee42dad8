// CpuBackend::im2col and col2im (tensor/backend/window2d.h): the unfolding that turns a
// convolution into one GEMM (tensor/ops/conv.cpp) and its transpose (the input's gradient).
// im2col splits into tasks of one cols row and one image (a contiguous run of oh * ow outputs);
// col2im into tasks of one (channel, image) plane, which sums its window offsets in a fixed order,
// so results never depend on the thread count. Stride-1 rows are copied (or added) as runs.
#include <algorithm>
#include <cstring>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

/// The output columns [begin, end) whose input column ox * stride - pad + offset lies in [0, in).
struct ValidRange {
  std::int64_t begin;
  std::int64_t end;
};

ValidRange valid_outputs(std::int64_t out, std::int64_t in, std::int64_t stride, std::int64_t pad,
                         std::int64_t offset) {
  // ox * stride + (offset - pad) in [0, in)  <=>  ox in [ceil((pad - offset) / stride),
  // ceil((in + pad - offset) / stride)).
  const auto ceil_div = [](std::int64_t a, std::int64_t b) {
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
  };
  const std::int64_t begin = std::clamp<std::int64_t>(ceil_div(pad - offset, stride), 0, out);
  const std::int64_t end = std::clamp<std::int64_t>(ceil_div(in + pad - offset, stride), 0, out);
  return {begin, std::max(begin, end)};
}

/// dst[t] += src[t] for t < count. The two never overlap (cols and the image are separate
/// tensors); saying so lets the compiler vectorise the run without a run-time overlap check.
template <typename T>
void add_run(const T* __restrict src, T* __restrict dst, std::int64_t count) {
  for (std::int64_t t = 0; t < count; ++t) dst[t] += src[t];
}

template <typename T>
void im2col_typed(const Tensor& x, const Window2d& w, T pad_value, const Tensor& cols) {
  const T* src = x.data<T>();
  T* dst = cols.data<T>();
  const std::int64_t plane = w.in_h * w.in_w;
  const std::int64_t outputs = w.out_h * w.out_w;
  const std::int64_t kk = w.kernel_h * w.kernel_w;
  const std::int64_t tasks = w.col_rows() * w.batch;
  parallel_for(tasks, threads_for(cols.numel()), [&](std::int64_t task) {
    const std::int64_t row = task / w.batch;
    const std::int64_t n = task % w.batch;
    const std::int64_t c = row / kk;
    const std::int64_t i = row % kk / w.kernel_w;
    const std::int64_t j = row % w.kernel_w;
    const T* image = src + (n * w.channels + c) * plane;
    T* out = dst + row * w.col_cols() + n * outputs;
    const ValidRange xs = valid_outputs(w.out_w, w.in_w, w.stride_w, w.pad_w, j * w.dilation_w);
    for (std::int64_t oy = 0; oy < w.out_h; ++oy) {
      T* run = out + oy * w.out_w;
      const std::int64_t iy = oy * w.stride_h - w.pad_h + i * w.dilation_h;
      if (iy < 0 || iy >= w.in_h) {
        std::fill(run, run + w.out_w, pad_value);
        continue;
      }
      std::fill(run, run + xs.begin, pad_value);
      std::fill(run + xs.end, run + w.out_w, pad_value);
      // Input column of output column ox: ox * stride_w + shift (kept as an index: the pointer
      // `line + shift` may lie before the image).
      const T* line = image + iy * w.in_w;
      const std::int64_t shift = j * w.dilation_w - w.pad_w;
      if (w.stride_w == 1) {
        std::memcpy(run + xs.begin, line + xs.begin + shift, sizeof(T) * (xs.end - xs.begin));
      } else {
        for (std::int64_t ox = xs.begin; ox < xs.end; ++ox) run[ox] = line[ox * w.stride_w + shift];
      }
    }
  });
}

template <typename T>
void col2im_typed(const Tensor& cols, const Window2d& w, const Tensor& x) {
  const T* src = cols.data<T>();
  T* dst = x.data<T>();
  const std::int64_t plane = w.in_h * w.in_w;
  const std::int64_t outputs = w.out_h * w.out_w;
  parallel_for(w.batch * w.channels, threads_for(cols.numel()), [&](std::int64_t task) {
    // Channel-major task order: consecutive tasks read the same kh kw rows of cols at
    // consecutive images, i.e. kh kw long sequential streams (image-major order jumps a whole
    // cols row, N oh ow floats, between tasks: 3x slower on the 14 x 14 CNN shape).
    const std::int64_t c = task / w.batch;
    const std::int64_t n = task % w.batch;
    T* image = dst + (n * w.channels + c) * plane;
    std::fill(image, image + plane, T(0));
    for (std::int64_t i = 0; i < w.kernel_h; ++i) {
      for (std::int64_t j = 0; j < w.kernel_w; ++j) {
        const std::int64_t row = (c * w.kernel_h + i) * w.kernel_w + j;
        const T* in = src + row * w.col_cols() + n * outputs;
        const ValidRange xs = valid_outputs(w.out_w, w.in_w, w.stride_w, w.pad_w, j * w.dilation_w);
        const std::int64_t shift = j * w.dilation_w - w.pad_w;
        for (std::int64_t oy = 0; oy < w.out_h; ++oy) {
          const std::int64_t iy = oy * w.stride_h - w.pad_h + i * w.dilation_h;
          if (iy < 0 || iy >= w.in_h) continue;
          const T* run = in + oy * w.out_w;
          T* line = image + iy * w.in_w;
          if (w.stride_w == 1) {
            add_run(run + xs.begin, line + xs.begin + shift, xs.end - xs.begin);
          } else {
            for (std::int64_t ox = xs.begin; ox < xs.end; ++ox) {
              line[ox * w.stride_w + shift] += run[ox];
            }
          }
        }
      }
    }
  });
}

void check_window_dtype(const Backend& backend, Op op, DType dtype) {
  RUCCL_CHECK(backend.supports(op, dtype), NotImplementedError,
              "not implemented: cpu::", op_name(op), " for dtype ", dtype);
}

}  // namespace

void CpuBackend::im2col(const Tensor& x, const Window2d& window, Scalar pad_value,
                        const Tensor& cols) {
  check_window_dtype(*this, Op::Im2col, x.dtype());
  RUCCL_ASSERT(x.is_contiguous() && cols.is_contiguous() && x.dtype() == cols.dtype());
  RUCCL_ASSERT(cols.numel() == window.col_rows() * window.col_cols());
  if (cols.numel() == 0) return;
  if (x.dtype() == DType::F32) {
    im2col_typed<float>(x, window, pad_value.to<float>(), cols);
  } else {
    im2col_typed<double>(x, window, pad_value.to<double>(), cols);
  }
}

void CpuBackend::col2im(const Tensor& cols, const Window2d& window, const Tensor& x) {
  check_window_dtype(*this, Op::Col2im, cols.dtype());
  RUCCL_ASSERT(x.is_contiguous() && cols.is_contiguous() && x.dtype() == cols.dtype());
  RUCCL_ASSERT(cols.numel() == window.col_rows() * window.col_cols());
  if (x.numel() == 0) return;
  if (cols.dtype() == DType::F32) {
    col2im_typed<float>(cols, window, x);
  } else {
    col2im_typed<double>(cols, window, x);
  }
}

}  // namespace ruccl::cpu
