// masked_fill, tril and triu on Var, each backward beside its forward: the gradient passes where
// the forward kept x and is zero where it wrote a constant.
#include "autodiff/ops/masking.h"

#include "autodiff/node.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/masking.h"

namespace ruccl::autodiff {

Var masked_fill(const Var& x, const Tensor& mask, Scalar value) {
  return make_var(
      ruccl::masked_fill(x.value(), mask, value), "masked_fill", {x},
      [mask](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::masked_fill(g, mask, 0); });
}

Var tril(const Var& x, std::int64_t diagonal) {
  return make_var(
      ruccl::tril(x.value(), diagonal), "tril", {x},
      [diagonal](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::tril(g, diagonal); });
}

Var triu(const Var& x, std::int64_t diagonal) {
  return make_var(
      ruccl::triu(x.value(), diagonal), "triu", {x},
      [diagonal](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::triu(g, diagonal); });
}

}  // namespace ruccl::autodiff
