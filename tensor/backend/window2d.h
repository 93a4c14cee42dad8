#pragma once
// The geometry of a 2-d sliding window over [N, C, H, W] (convolution, pooling): what
// Backend::im2col and Backend::col2im take. The frontend (tensor/ops/conv.cpp, pool.cpp) checks
// it and computes the output size; a backend may trust it.
#include <cstdint>

namespace ruccl {

struct Window2d {
  std::int64_t batch = 1;     // N
  std::int64_t channels = 1;  // C
  std::int64_t in_h = 1;      // H
  std::int64_t in_w = 1;      // W
  std::int64_t kernel_h = 1;
  std::int64_t kernel_w = 1;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  std::int64_t pad_h = 0;  // implicit padding on each side
  std::int64_t pad_w = 0;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  std::int64_t out_h = 1;  // (H + 2 pad_h - dilation_h (kernel_h - 1) - 1) / stride_h + 1
  std::int64_t out_w = 1;

  /// Rows of the unfolded matrix: C * kh * kw.
  std::int64_t col_rows() const { return channels * kernel_h * kernel_w; }
  /// Columns of the unfolded matrix: N * oh * ow.
  std::int64_t col_cols() const { return batch * out_h * out_w; }
};

}  // namespace ruccl
