// max_pool2d, avg_pool2d and adaptive_avg_pool2d on Tensors (tensor/ops/pool.h).
#include "tensor/ops/pool.h"

#include <limits>
#include <vector>

#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"

namespace ruccl {

Window2d pool2d_window(const Tensor& x, Size2d kernel, std::optional<Size2d> stride, Size2d padding,
                       Size2d dilation, const char* op) {
  RUCCL_CHECK(x.defined(), ValueError, op, ": expected a defined input, got an undefined one");
  RUCCL_CHECK(x.dim() == 4, ShapeError, op, ": expected a 4-d input [N, C, H, W], got ", x.shape());
  RUCCL_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F64, DTypeError, op,
              ": expected an F32 or F64 input, got ", x.dtype());
  const Size2d step = stride.value_or(kernel);
  RUCCL_CHECK(kernel.h >= 1 && kernel.w >= 1, ValueError, op,
              ": expected a kernel of at least 1 x 1, got ", kernel);
  RUCCL_CHECK(step.h >= 1 && step.w >= 1, ValueError, op, ": expected strides >= 1, got ", step);
  RUCCL_CHECK(dilation.h >= 1 && dilation.w >= 1, ValueError, op, ": expected dilations >= 1, got ",
              dilation);
  RUCCL_CHECK(
      padding.h >= 0 && padding.w >= 0 && 2 * padding.h <= kernel.h && 2 * padding.w <= kernel.w,
      ValueError, op, ": expected paddings between 0 and half the kernel ", kernel, ", got ",
      padding);
  Window2d w;
  w.batch = x.size(0) * x.size(1);
  w.channels = 1;
  w.in_h = x.size(2);
  w.in_w = x.size(3);
  w.kernel_h = kernel.h;
  w.kernel_w = kernel.w;
  w.stride_h = step.h;
  w.stride_w = step.w;
  w.pad_h = padding.h;
  w.pad_w = padding.w;
  w.dilation_h = dilation.h;
  w.dilation_w = dilation.w;
  const auto out = [&](const char* dim, std::int64_t in, std::int64_t k, std::int64_t s,
                       std::int64_t p, std::int64_t d) {
    const std::int64_t span = d * (k - 1) + 1;
    RUCCL_CHECK(in + 2 * p >= span, ShapeError, op, ": expected a padded input ", dim,
                " of at least the dilated kernel's ", span, " (output size >= 1), got ", in + 2 * p,
                " (input ", in, " + 2 x padding ", p, ")");
    return (in + 2 * p - span) / s + 1;
  };
  w.out_h = out("height", w.in_h, w.kernel_h, w.stride_h, w.pad_h, w.dilation_h);
  w.out_w = out("width", w.in_w, w.kernel_w, w.stride_w, w.pad_w, w.dilation_w);
  return w;
}

namespace {

Shape pooled_shape(const Tensor& x, const Window2d& w) {
  return {x.size(0), x.size(1), w.out_h, w.out_w};
}

}  // namespace

MaxPool2dResult max_pool2d_with_argmax(const Tensor& x, const MaxPool2dSpec& spec) {
  const Window2d w =
      pool2d_window(x, spec.kernel, spec.stride, spec.padding, spec.dilation, "max_pool2d");
  const Tensor cols = im2col(x, w, -std::numeric_limits<double>::infinity());  // [kk, N C oh ow]
  return {max(cols, 0).view(pooled_shape(x, w)), argmax(cols, 0), w};
}

Tensor max_pool2d(const Tensor& x, const MaxPool2dSpec& spec) {
  return max_pool2d_with_argmax(x, spec).values;
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& argmax,
                           const Window2d& window) {
  const std::int64_t columns = window.col_cols();
  const Tensor zeros = Tensor::zeros({window.kernel_h * window.kernel_w, columns},
                                     grad_output.dtype(), grad_output.device());
  const Tensor grad_cols =
      scatter_add(zeros, 0, argmax.view({1, columns}), grad_output.reshape({1, columns}));
  return col2im(grad_cols, window)
      .view({grad_output.size(0), grad_output.size(1), window.in_h, window.in_w});
}

Tensor avg_pool2d_divisor(const Window2d& window, bool count_include_pad, DType dtype,
                          Device device) {
  const std::int64_t outputs = window.out_h * window.out_w;
  if (count_include_pad) {
    return Tensor::full({1, outputs}, static_cast<double>(window.kernel_h * window.kernel_w), dtype,
                        device);
  }
  // How many of each window's entries are the input's own: im2col of ones, padding zero.
  Window2d one = window;
  one.batch = 1;
  const Tensor ones = Tensor::ones({1, 1, window.in_h, window.in_w}, dtype, device);
  return sum(im2col(ones, one, 0.0), 0).view({1, outputs});
}

Tensor avg_pool2d(const Tensor& x, const AvgPool2dSpec& spec) {
  const Window2d w = pool2d_window(x, spec.kernel, spec.stride, spec.padding, 1, "avg_pool2d");
  const Tensor sums = sum(im2col(x, w, 0.0), 0).view({w.batch, w.out_h * w.out_w});
  const Tensor divisor = avg_pool2d_divisor(w, spec.count_include_pad, x.dtype(), x.device());
  return div(sums, divisor).view(pooled_shape(x, w));
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const AvgPool2dSpec& spec,
                           const Window2d& window) {
  const Tensor divisor =
      avg_pool2d_divisor(window, spec.count_include_pad, grad_output.dtype(), grad_output.device());
  const std::int64_t outputs = window.out_h * window.out_w;
  const Tensor per_output = div(grad_output.reshape({window.batch, outputs}), divisor);
  const Tensor grad_cols = per_output.view({1, window.col_cols()})
                               .expand({window.kernel_h * window.kernel_w, window.col_cols()});
  return col2im(grad_cols, window)
      .view({grad_output.size(0), grad_output.size(1), window.in_h, window.in_w});
}

Tensor adaptive_pool_matrix(std::int64_t in, std::int64_t out, DType dtype, Device device) {
  std::vector<double> m(static_cast<std::size_t>(in * out), 0.0);
  for (std::int64_t i = 0; i < out; ++i) {
    const std::int64_t start = i * in / out;
    const std::int64_t end = ((i + 1) * in + out - 1) / out;
    for (std::int64_t k = start; k < end; ++k) {
      m[static_cast<std::size_t>(i * in + k)] = 1.0 / static_cast<double>(end - start);
    }
  }
  return Tensor::from_vector<double>(m, {out, in}).to(dtype).to(device);
}

Tensor adaptive_avg_pool2d(const Tensor& x, Size2d output_size) {
  RUCCL_CHECK(x.defined(), ValueError,
              "adaptive_avg_pool2d: expected a defined input, got an undefined one");
  RUCCL_CHECK(x.dim() == 4, ShapeError,
              "adaptive_avg_pool2d: expected a 4-d input [N, C, H, W], got ", x.shape());
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError,
              "adaptive_avg_pool2d: expected a floating input, got ", x.dtype());
  RUCCL_CHECK(output_size.h >= 1 && output_size.w >= 1, ValueError,
              "adaptive_avg_pool2d: expected an output size of at least (1, 1), got ", output_size);
  RUCCL_CHECK(x.size(2) >= 1 && x.size(3) >= 1, ShapeError,
              "adaptive_avg_pool2d: expected a non-empty H and W, got ", x.shape());
  const Tensor rows = adaptive_pool_matrix(x.size(2), output_size.h, x.dtype(), x.device());
  const Tensor cols = adaptive_pool_matrix(x.size(3), output_size.w, x.dtype(), x.device());
  return matmul(matmul(rows, x), cols.transpose(0, 1));
}

}  // namespace ruccl
