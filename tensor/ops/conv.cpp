// conv1d / conv2d on Tensors: argument checks and the GEMM formulation (tensor/ops/conv.h).
//
// Layout: im2col unfolds x [N, C, H, W] into cols [C kh kw, N oh ow], whose rows split evenly by
// group. Forward with one group is one product per image, weight [O, C kh kw] @ cols[:, image]
// (a batched matmul over N with the weight broadcast), written straight into [N, O, oh, ow];
// with groups, one batched matmul over the groups, weight [G, O/G, C/G kh kw] @ cols [G, C/G kh
// kw, N oh ow] = [O, N oh ow], which a single pass moves to [N, O, oh, ow] with the bias. The
// gradients are the transposed products on the same matrices.
#include "tensor/ops/conv.h"

#include <algorithm>

#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"

namespace ruccl {

std::ostream& operator<<(std::ostream& os, const Size2d& s) {
  return os << "(" << s.h << ", " << s.w << ")";
}

namespace {

/// One spatial dim's output size; ShapeError when the dilated kernel does not fit the padded
/// input (no output).
std::int64_t out_size(const char* op, const char* dim, std::int64_t in, std::int64_t kernel,
                      std::int64_t stride, std::int64_t pad, std::int64_t dilation) {
  const std::int64_t padded = in + 2 * pad;
  const std::int64_t span = dilation * (kernel - 1) + 1;
  RUCCL_CHECK(padded >= span, ShapeError, op, ": expected a padded input ", dim,
              " of at least the dilated kernel's ", span, " (output size >= 1), got ", padded,
              " (input ", in, " + 2 x padding ", pad, ")");
  return (padded - span) / stride + 1;
}

}  // namespace

Window2d conv2d_window(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Conv2dSpec& spec, const char* op) {
  RUCCL_CHECK(x.defined() && weight.defined(), ValueError, op,
              ": expected defined input and weight, got an undefined one");
  RUCCL_CHECK(x.dim() == 4, ShapeError, op, ": expected a 4-d input [N, C, H, W], got ", x.shape());
  RUCCL_CHECK(weight.dim() == 4, ShapeError, op,
              ": expected a 4-d weight [out, in / groups, kh, kw], got ", weight.shape());
  RUCCL_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F64, DTypeError, op,
              ": expected an F32 or F64 input, got ", x.dtype());
  RUCCL_CHECK(weight.dtype() == x.dtype(), DTypeError, op, ": expected a weight of dtype ",
              x.dtype(), " (the input's), got ", weight.dtype());
  RUCCL_CHECK(weight.device() == x.device(), DeviceError, op, ": expected the weight on ",
              x.device(), " (the input's device), got ", weight.device());
  RUCCL_CHECK(spec.groups >= 1, ValueError, op, ": expected groups >= 1, got ", spec.groups);
  RUCCL_CHECK(spec.stride.h >= 1 && spec.stride.w >= 1, ValueError, op,
              ": expected strides >= 1, got ", spec.stride);
  RUCCL_CHECK(spec.dilation.h >= 1 && spec.dilation.w >= 1, ValueError, op,
              ": expected dilations >= 1, got ", spec.dilation);
  RUCCL_CHECK(spec.padding.h >= 0 && spec.padding.w >= 0, ValueError, op,
              ": expected paddings >= 0, got ", spec.padding);
  const std::int64_t channels = x.size(1);
  const std::int64_t out_channels = weight.size(0);
  RUCCL_CHECK(channels % spec.groups == 0, ValueError, op, ": expected groups (", spec.groups,
              ") to divide the input's ", channels, " channels, got a remainder of ",
              channels % spec.groups);
  RUCCL_CHECK(out_channels % spec.groups == 0, ValueError, op, ": expected groups (", spec.groups,
              ") to divide the weight's ", out_channels, " output channels, got a remainder of ",
              out_channels % spec.groups);
  RUCCL_CHECK(weight.size(1) * spec.groups == channels, ShapeError, op, ": expected ", channels,
              " input channels = weight.shape[1] (", weight.size(1), ") x groups (", spec.groups,
              "), got an input of shape ", x.shape(), " and a weight of shape ", weight.shape());
  RUCCL_CHECK(weight.size(2) >= 1 && weight.size(3) >= 1, ShapeError, op,
              ": expected a kernel of at least 1 x 1, got a weight of shape ", weight.shape());
  if (bias.defined()) {
    RUCCL_CHECK(bias.dim() == 1 && bias.size(0) == out_channels, ShapeError, op,
                ": expected a bias of shape [", out_channels, "], got ", bias.shape());
    RUCCL_CHECK(bias.dtype() == x.dtype(), DTypeError, op, ": expected a bias of dtype ", x.dtype(),
                ", got ", bias.dtype());
    RUCCL_CHECK(bias.device() == x.device(), DeviceError, op, ": expected the bias on ", x.device(),
                ", got ", bias.device());
  }
  Window2d w;
  w.batch = x.size(0);
  w.channels = channels;
  w.in_h = x.size(2);
  w.in_w = x.size(3);
  w.kernel_h = weight.size(2);
  w.kernel_w = weight.size(3);
  w.stride_h = spec.stride.h;
  w.stride_w = spec.stride.w;
  w.pad_h = spec.padding.h;
  w.pad_w = spec.padding.w;
  w.dilation_h = spec.dilation.h;
  w.dilation_w = spec.dilation.w;
  w.out_h = out_size(op, "height", w.in_h, w.kernel_h, w.stride_h, w.pad_h, w.dilation_h);
  w.out_w = out_size(op, "width", w.in_w, w.kernel_w, w.stride_w, w.pad_w, w.dilation_w);
  return w;
}

Tensor im2col(const Tensor& x, const Window2d& window, Scalar pad_value) {
  Tensor cols =
      Tensor::empty({window.col_rows(), window.col_cols()}, x.dtype(), x.device(), "im2col");
  backend_for(x.device()).im2col(x.contiguous(), window, pad_value, cols);
  return cols;
}

Tensor col2im(const Tensor& cols, const Window2d& window) {
  Tensor x = Tensor::empty({window.batch, window.channels, window.in_h, window.in_w}, cols.dtype(),
                           cols.device(), "col2im");
  backend_for(cols.device()).col2im(cols.contiguous(), window, x);
  return x;
}

Tensor conv2d_from_cols(const Tensor& cols, const Tensor& weight, const Tensor& bias,
                        const Window2d& window, std::int64_t groups) {
  const std::int64_t out_channels = weight.size(0);
  const std::int64_t rows = window.col_rows() / groups;
  const std::int64_t outputs = window.out_h * window.out_w;
  const Tensor w3 = weight.contiguous().view({groups, out_channels / groups, rows});
  if (groups == 1) {
    // One product per image, weight [O, rows] @ cols[:, image n] [rows, oh ow] (a row-major
    // block of cols, leading dim N oh ow): the result is image n's [O, oh, ow] in place, so the
    // whole output comes out NCHW with no layout pass; the bias is added in place.
    const Tensor per_image =
        cols.view({rows, window.batch, outputs}).permute({1, 0, 2});  // [N, rows, oh ow]
    Tensor y = matmul(w3, per_image)  // [1, O, rows] broadcast over N: [N, O, oh ow]
                   .view({window.batch, out_channels, window.out_h, window.out_w});
    if (bias.defined()) {
      // out aliases a: an elementwise add reads each element before it writes the same one.
      backend_for(y.device())
          .binary(Op::Add, y, bias.view({1, out_channels, 1, 1}).expand(y.shape()), y);
    }
    return y;
  }
  const Tensor y = matmul(w3, cols.view({groups, rows, window.col_cols()}));
  const Tensor nchw =
      y.view({out_channels, window.batch, window.out_h, window.out_w}).permute({1, 0, 2, 3});
  if (bias.defined()) return add(nchw, bias.view({1, out_channels, 1, 1}));
  return nchw.contiguous();
}

Tensor conv2d_grad_rows(const Tensor& grad_output, std::int64_t groups) {
  const std::int64_t n = grad_output.size(0);
  const std::int64_t out_channels = grad_output.size(1);
  const std::int64_t outputs = grad_output.size(2) * grad_output.size(3);
  return grad_output.reshape({n, out_channels, outputs})
      .permute({1, 0, 2})
      .contiguous()
      .view({groups, out_channels / groups, n * outputs});
}

Tensor conv2d_input_grad(const Tensor& grad_rows, const Tensor& weight, const Window2d& window,
                         std::int64_t groups) {
  // Chunks of whole images, each about kChunkElements of grad cols (1 MiB of F32): the product
  // writes a chunk's columns and col2im reads them back while they are still in cache, instead
  // of one [C kh kw, N oh ow] matrix written to memory and read back. A block of consecutive
  // images' columns is exactly the cols matrix of a window over those images, so each chunk is
  // the same product and fold as the whole, and every element of dx sums the same terms in the
  // same order (the chunk size depends on the shape only).
  constexpr std::int64_t kChunkElements = std::int64_t{1} << 18;
  const std::int64_t rows = window.col_rows() / groups;
  const std::int64_t outputs = window.out_h * window.out_w;
  const std::int64_t image_elements = std::max<std::int64_t>(window.col_rows() * outputs, 1);
  const std::int64_t chunk = std::clamp<std::int64_t>(kChunkElements / image_elements, 1,
                                                      std::max<std::int64_t>(window.batch, 1));
  const Tensor w3t =
      weight.contiguous().view({groups, weight.size(0) / groups, rows}).transpose(1, 2);
  Tensor x = Tensor::empty({window.batch, window.channels, window.in_h, window.in_w},
                           grad_rows.dtype(), grad_rows.device(), "conv2d_input_grad");
  Window2d part = window;
  for (std::int64_t n0 = 0; n0 < window.batch; n0 += chunk) {
    part.batch = std::min(chunk, window.batch - n0);
    const Tensor rows_part = grad_rows.narrow(2, n0 * outputs, part.batch * outputs);
    const Tensor grad_cols = matmul(w3t, rows_part);  // [G, rows, images oh ow]
    backend_for(x.device())
        .col2im(grad_cols.view({part.col_rows(), part.col_cols()}), part,
                x.narrow(0, n0, part.batch));
  }
  return x;
}

namespace {

/// How many pieces the weight gradient's long inner dim (N oh ow) is cut into: a weight of few
/// elements is one small tile of the GEMM, which would run on one thread for all of that dim.
/// Pieces are batch items of one matmul (spread over the threads), summed in a fixed order after.
/// Depends on the shape only, so the result does not depend on the thread count.
std::int64_t weight_grad_pieces(std::int64_t inner, std::int64_t weight_elements) {
  constexpr std::int64_t kMinPiece = 2048;
  constexpr std::int64_t kLargeWeight = std::int64_t{1} << 16;  // enough tiles to share already
  if (weight_elements >= kLargeWeight) return 1;
  for (const std::int64_t pieces : {16, 8, 4, 2}) {
    if (inner % pieces == 0 && inner / pieces >= kMinPiece) return pieces;
  }
  return 1;
}

}  // namespace

Tensor conv2d_weight_grad(const Tensor& grad_rows, const Tensor& cols, const Shape& weight_shape,
                          std::int64_t groups) {
  const std::int64_t rows = cols.size(0) / groups;
  const std::int64_t inner = cols.size(1);
  const std::int64_t out_per_group = grad_rows.size(1);
  const std::int64_t pieces =
      groups == 1 ? weight_grad_pieces(inner, out_per_group * rows) : std::int64_t{1};
  if (pieces == 1) {
    const Tensor c3 = cols.view({groups, rows, inner});
    return matmul(grad_rows, c3.transpose(1, 2)).view(weight_shape);  // [G, O/G, rows]
  }
  // One group: [pieces] products of [rows, piece] @ [piece, O] (the longer of O and rows last,
  // the GEMM tile's wide side), then their sum in piece order.
  const std::int64_t piece = inner / pieces;
  const Tensor g4 = grad_rows.view({out_per_group, pieces, piece}).permute({1, 2, 0});
  const Tensor c4 = cols.view({rows, pieces, piece}).permute({1, 0, 2});
  const Tensor partial = matmul(c4, g4);  // [pieces, rows, O]
  return sum(partial, 0).transpose(0, 1).contiguous().view(weight_shape);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dSpec& spec) {
  const Window2d window = conv2d_window(x, weight, bias, spec);
  return conv2d_from_cols(im2col(x, window), weight, bias, window, spec.groups);
}

Conv2dSpec conv1d_as_conv2d(const Tensor& x, const Tensor& weight, const Conv1dSpec& spec) {
  RUCCL_CHECK(x.defined() && weight.defined(), ValueError,
              "conv1d: expected defined input and weight, got an undefined one");
  RUCCL_CHECK(x.dim() == 3, ShapeError, "conv1d: expected a 3-d input [N, C, L], got ", x.shape());
  RUCCL_CHECK(weight.dim() == 3, ShapeError,
              "conv1d: expected a 3-d weight [out, in / groups, k], got ", weight.shape());
  return {{1, spec.stride}, {0, spec.padding}, {1, spec.dilation}, spec.groups};
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dSpec& spec) {
  const Conv2dSpec spec2 = conv1d_as_conv2d(x, weight, spec);
  const Tensor x4 = x.unsqueeze(2);
  const Tensor w4 = weight.unsqueeze(2);
  const Window2d window = conv2d_window(x4, w4, bias, spec2, "conv1d");
  return conv2d_from_cols(im2col(x4, window), w4, bias, window, spec.groups).squeeze(2);
}

}  // namespace ruccl
