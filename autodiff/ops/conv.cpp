// Convolution on Var, each forward with its backward rule beside it (autodiff/ops/conv.h).
#include "autodiff/ops/conv.h"

#include "autodiff/node.h"
#include "autodiff/ops/shape.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

namespace {

/// conv2d on 4-d Vars; `op` names the caller in error messages and on the tape.
Var conv2d_var(const Var& x, const Var& weight, const Var& bias, const Conv2dSpec& spec,
               const char* op) {
  RUCCL_CHECK(x.defined() && weight.defined(), ValueError, op,
              ": expected defined input and weight, got an undefined one");
  const Tensor b = bias.defined() ? bias.value() : Tensor();
  const Window2d window = conv2d_window(x.value(), weight.value(), b, spec, op);
  const Tensor cols = im2col(x.value(), window);
  Tensor out = conv2d_from_cols(cols, weight.value(), b, window, spec.groups);
  auto rule = [window, groups = spec.groups, weight_shape = weight.shape(),
               saved_cols = weight.requires_grad() ? cols : Tensor(),
               saved_weight = x.requires_grad() ? weight.value() : Tensor()](const Tensor& g,
                                                                             GradInputs& grads) {
    const bool want_bias = grads.size() > 2 && grads.needed(2);
    if (grads.needed(0) || grads.needed(1)) {
      const Tensor rows = conv2d_grad_rows(g, groups);
      if (grads.needed(0)) grads[0] = conv2d_input_grad(rows, saved_weight, window, groups);
      if (grads.needed(1)) grads[1] = conv2d_weight_grad(rows, saved_cols, weight_shape, groups);
    }
    if (want_bias) grads[2] = ruccl::sum(g, {0, 2, 3});
  };
  if (bias.defined()) return make_var(std::move(out), op, {x, weight, bias}, std::move(rule));
  return make_var(std::move(out), op, {x, weight}, std::move(rule));
}

}  // namespace

Var conv2d(const Var& x, const Var& weight, const Var& bias, const Conv2dSpec& spec) {
  return conv2d_var(x, weight, bias, spec, "conv2d");
}

Var conv1d(const Var& x, const Var& weight, const Var& bias, const Conv1dSpec& spec) {
  const Conv2dSpec spec2 = conv1d_as_conv2d(x.defined() ? x.value() : Tensor(),
                                            weight.defined() ? weight.value() : Tensor(), spec);
  return squeeze(conv2d_var(unsqueeze(x, 2), unsqueeze(weight, 2), bias, spec2, "conv1d"), 2);
}

}  // namespace ruccl::autodiff
