#pragma once
// Convolution on Tensors (no tape; autodiff/ops/conv.h records the gradients), as
// torch.nn.functional.conv1d / conv2d: NCL / NCHW inputs, weights [out, in / groups, k...],
// stride, zero padding, dilation, groups and an optional bias. The work is one GEMM per group on
// the unfolded input (Backend::im2col, then matmul); the backward helpers are the transposed
// products, with Backend::col2im folding the input's gradient back.
#include <cstdint>
#include <ostream>

#include "tensor/backend/window2d.h"
#include "tensor/core/tensor.h"

namespace ruccl {

/// A (height, width) pair; one number means both: `.stride = 2` or `.stride = {2, 1}`.
struct Size2d {
  std::int64_t h;
  std::int64_t w;
  Size2d(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit, as torch's int-or-pair
  Size2d(std::int64_t height, std::int64_t width) : h(height), w(width) {}
  friend bool operator==(const Size2d&, const Size2d&) = default;
};
std::ostream& operator<<(std::ostream& os, const Size2d& s);

/// conv2d's arguments besides the tensors (torch's defaults).
struct Conv2dSpec {
  Size2d stride = 1;
  Size2d padding = 0;  // zeros on each side
  Size2d dilation = 1;
  std::int64_t groups = 1;
};

/// conv1d's arguments besides the tensors.
struct Conv1dSpec {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
};

/// x [N, C, H, W] * weight [O, C / groups, kh, kw] (+ bias [O]) -> [N, O, oh, ow], with
/// oh = (H + 2 pad - dilation (kh - 1) - 1) / stride + 1. F32 or F64, one device. An undefined
/// bias means none. ShapeError / DTypeError / DeviceError / ValueError name "conv2d" and say
/// what was expected.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dSpec& spec = {});
/// x [N, C, L] * weight [O, C / groups, k] (+ bias [O]) -> [N, O, out_l]: conv2d on a height of 1.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv1dSpec& spec = {});

/// conv1d's rank checks (ShapeError naming "conv1d"), then its arguments for conv2d on x and
/// weight unsqueezed at dim 2 (a height of 1).
Conv2dSpec conv1d_as_conv2d(const Tensor& x, const Tensor& weight, const Conv1dSpec& spec);

/// The window of conv2d(x, weight, spec) after every argument check (`op` names the caller in
/// the messages).
Window2d conv2d_window(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Conv2dSpec& spec, const char* op = "conv2d");

/// Backend::im2col with its output allocated: x [N, C, H, W] -> [C kh kw, N oh ow] (x made
/// contiguous first); `pad_value` fills the padding (0 for convolution, -inf for max pooling).
Tensor im2col(const Tensor& x, const Window2d& window, Scalar pad_value = 0.0);
/// Backend::col2im with its output allocated: cols [C kh kw, N oh ow] -> [N, C, H, W].
Tensor col2im(const Tensor& cols, const Window2d& window);

/// conv2d on an input already unfolded by im2col(x, window): [N, O, oh, ow].
Tensor conv2d_from_cols(const Tensor& cols, const Tensor& weight, const Tensor& bias,
                        const Window2d& window, std::int64_t groups);
/// grad_output [N, O, oh, ow] -> [O, N oh ow] arranged per group as [groups, O / groups, N oh ow]:
/// the left/right operand both conv2d gradients share (one copy).
Tensor conv2d_grad_rows(const Tensor& grad_output, std::int64_t groups);
/// d loss / d x of conv2d from conv2d_grad_rows(grad_output): weight^T @ rows, folded by col2im.
Tensor conv2d_input_grad(const Tensor& grad_rows, const Tensor& weight, const Window2d& window,
                         std::int64_t groups);
/// d loss / d weight of conv2d from conv2d_grad_rows(grad_output) and im2col(x): rows @ cols^T.
Tensor conv2d_weight_grad(const Tensor& grad_rows, const Tensor& cols, const Shape& weight_shape,
                          std::int64_t groups);

}  // namespace ruccl
