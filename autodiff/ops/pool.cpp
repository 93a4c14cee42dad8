// Pooling and padding on Var, each forward with its backward rule beside it (declared in
// autodiff/ops/conv.h).
#include "autodiff/node.h"
#include "autodiff/ops/conv.h"
#include "autodiff/ops/index.h"
#include "tensor/ops/linalg.h"

namespace ruccl::autodiff {

Var max_pool2d(const Var& x, const MaxPool2dSpec& spec) {
  MaxPool2dResult r = max_pool2d_with_argmax(x.value(), spec);
  return make_var(
      std::move(r.values), "max_pool2d", {x},
      [argmax = std::move(r.argmax), window = r.window](const Tensor& g, GradInputs& grads) {
        grads[0] = max_pool2d_backward(g, argmax, window);
      });
}

Var avg_pool2d(const Var& x, const AvgPool2dSpec& spec) {
  Tensor out = ruccl::avg_pool2d(x.value(), spec);  // checks the arguments
  const Window2d window =
      pool2d_window(x.value(), spec.kernel, spec.stride, spec.padding, 1, "avg_pool2d");
  return make_var(std::move(out), "avg_pool2d", {x},
                  [spec, window](const Tensor& g, GradInputs& grads) {
                    grads[0] = avg_pool2d_backward(g, spec, window);
                  });
}

Var adaptive_avg_pool2d(const Var& x, Size2d output_size) {
  Tensor out = ruccl::adaptive_avg_pool2d(x.value(), output_size);  // checks the arguments
  return make_var(
      std::move(out), "adaptive_avg_pool2d", {x},
      [rows = adaptive_pool_matrix(x.shape()[2], output_size.h, x.dtype(), x.value().device()),
       cols = adaptive_pool_matrix(x.shape()[3], output_size.w, x.dtype(), x.value().device())](
          const Tensor& g, GradInputs& grads) {
        grads[0] = ruccl::matmul(ruccl::matmul(rows.transpose(0, 1), g), cols);
      });
}

Var pad(const Var& x, const std::vector<std::int64_t>& pads, PadMode mode, double value) {
  RUCCL_CHECK(x.defined(), ValueError, "pad: expected a defined input, got an undefined one");
  const auto widths = pad_widths(x.value(), pads, mode);
  if (mode != PadMode::Constant) {  // index_selects: their gradient adds into the sources
    Var out = x;
    for (std::int64_t d = 0; d < x.dim(); ++d) {
      const auto [before, after] = widths[static_cast<std::size_t>(d)];
      if (before == 0 && after == 0) continue;
      out = index_select(out, d,
                         pad_source_index(x.shape()[d], before, after, mode, x.value().device()));
    }
    return out;
  }
  return make_var(ruccl::pad(x.value(), pads, mode, value), "pad", {x},
                  [widths](const Tensor& g, GradInputs& grads) {
                    Tensor inner = g;
                    for (std::size_t d = 0; d < widths.size(); ++d) {
                      const auto dim = static_cast<std::int64_t>(d);
                      inner = inner.narrow(dim, widths[d].first,
                                           g.size(dim) - widths[d].first - widths[d].second);
                    }
                    grads[0] = inner;
                  });
}

}  // namespace ruccl::autodiff
