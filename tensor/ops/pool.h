#pragma once
// 2-d pooling on Tensors (no tape; autodiff/ops/pool.h records the gradients), as
// torch.nn.functional.max_pool2d / avg_pool2d / adaptive_avg_pool2d on [N, C, H, W] (ceil_mode
// off). Max and average pooling unfold every window with Backend::im2col (each channel as its own
// image) and reduce over the window; their gradients fold back with Backend::col2im. Adaptive
// average pooling is two small matmuls with fixed averaging matrices.
#include <cstdint>
#include <optional>

#include "tensor/backend/window2d.h"
#include "tensor/core/tensor.h"
#include "tensor/ops/conv.h"

namespace ruccl {

/// max_pool2d's window (torch's defaults: stride = kernel, no padding, no dilation).
struct MaxPool2dSpec {
  Size2d kernel;
  std::optional<Size2d> stride = std::nullopt;  // none: the kernel size
  Size2d padding = 0;                           // -inf on each side, at most half the kernel
  Size2d dilation = 1;
};

/// avg_pool2d's window.
struct AvgPool2dSpec {
  Size2d kernel;
  std::optional<Size2d> stride = std::nullopt;  // none: the kernel size
  Size2d padding = 0;                           // zeros on each side, at most half the kernel
  /// Whether padding counts in the divisor (torch's default) or only the input's own elements.
  bool count_include_pad = true;
};

/// The window of a pooling over x [N, C, H, W], each channel as its own image (batch N C,
/// one channel), after every argument check; `op` names the caller in the messages.
Window2d pool2d_window(const Tensor& x, Size2d kernel, std::optional<Size2d> stride, Size2d padding,
                       Size2d dilation, const char* op);

/// The maximum of each window and where it is.
struct MaxPool2dResult {
  Tensor values;  // [N, C, oh, ow]
  Tensor argmax;  // I64 [N C oh ow]: the window offset (i kw + j) of the maximum, the first on ties
  Window2d window;  // the window, for max_pool2d_backward
};
MaxPool2dResult max_pool2d_with_argmax(const Tensor& x, const MaxPool2dSpec& spec);
/// [N, C, H, W] -> [N, C, oh, ow].
Tensor max_pool2d(const Tensor& x, const MaxPool2dSpec& spec);
/// d loss / d x: each output's gradient goes to its window's maximum (the first on ties).
Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& argmax, const Window2d& window);

/// [N, C, H, W] -> [N, C, oh, ow].
Tensor avg_pool2d(const Tensor& x, const AvgPool2dSpec& spec);
/// d loss / d x of avg_pool2d(x, spec) for an input of `window`'s shape.
Tensor avg_pool2d_backward(const Tensor& grad_output, const AvgPool2dSpec& spec,
                           const Window2d& window);
/// The divisor of every output position, [1, oh ow] in x's dtype and device.
Tensor avg_pool2d_divisor(const Window2d& window, bool count_include_pad, DType dtype,
                          Device device);

/// The averaging matrix of adaptive pooling along one dim: [out, in] with row i holding
/// 1 / len over the window [floor(i in / out), ceil((i + 1) in / out)).
Tensor adaptive_pool_matrix(std::int64_t in, std::int64_t out, DType dtype, Device device);
/// x [N, C, H, W] -> [N, C, oh, ow]: every output the mean of its adaptive window (torch's).
Tensor adaptive_avg_pool2d(const Tensor& x, Size2d output_size);

}  // namespace ruccl
