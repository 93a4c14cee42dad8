#pragma once
// Differentiable convolution and pooling on Var (tensor/ops/conv.h, pool.h hold the math and the
// argument checks). Backward rules:
//   conv2d:  d x = col2im(weight^T @ g) (the transposed convolution), d weight = g @ cols^T with
//            the forward's unfolded input, d bias = g summed over N, H, W; per group.
//   max_pool2d: each output's gradient goes to its window's maximum (the first in the window's
//            row-major order on ties, as PyTorch); padding never receives any.
//   avg_pool2d: each output's gradient / its divisor to every element of its window.
//   adaptive_avg_pool2d: rows^T @ g @ cols with the averaging matrices of the forward.
#include <cstdint>
#include <vector>

#include "autodiff/var.h"
#include "tensor/ops/conv.h"
#include "tensor/ops/pad.h"
#include "tensor/ops/pool.h"

namespace ruccl::autodiff {

/// x [N, C, H, W], weight [O, C / groups, kh, kw], bias [O] or undefined -> [N, O, oh, ow].
Var conv2d(const Var& x, const Var& weight, const Var& bias = Var(), const Conv2dSpec& spec = {});
/// x [N, C, L], weight [O, C / groups, k], bias [O] or undefined -> [N, O, out_l].
Var conv1d(const Var& x, const Var& weight, const Var& bias = Var(), const Conv1dSpec& spec = {});

Var max_pool2d(const Var& x, const MaxPool2dSpec& spec);
Var avg_pool2d(const Var& x, const AvgPool2dSpec& spec);
Var adaptive_avg_pool2d(const Var& x, Size2d output_size);

/// torch.nn.functional.pad (tensor/ops/pad.h). Backward: constant mode narrows the gradient back
/// to x's elements; reflect and replicate are index_selects, whose gradient adds each padded
/// element's gradient into its source.
Var pad(const Var& x, const std::vector<std::int64_t>& pads, PadMode mode = PadMode::Constant,
        double value = 0.0);

}  // namespace ruccl::autodiff
