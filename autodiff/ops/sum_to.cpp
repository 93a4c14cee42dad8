#include "autodiff/ops/sum_to.h"

#include <vector>

#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const Shape& from = grad.shape();
  const std::int64_t lead = from.size() - shape.size();
  RUCCL_CHECK(lead >= 0, ShapeError, "sum_to: expected a shape with at most ", from.size(),
              " dims (one that broadcasts to ", from, "), got ", shape);
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (std::int64_t d = 0; d < shape.size(); ++d) {
    const std::int64_t n = from[lead + d];
    if (shape[d] == n) continue;
    RUCCL_CHECK(shape[d] == 1, ShapeError, "sum_to: shape ", shape, " does not broadcast to ",
                from);
    dims.push_back(lead + d);
  }
  Tensor out = dims.empty() ? grad : ruccl::sum(grad, dims, /*keepdim=*/true);
  return reshape_grad(out, shape).to(grad.dtype());
}

Tensor reshape_grad(const Tensor& grad, const Shape& shape) {
  if (grad.dim() == 0 && shape.size() > 0) return grad.expand(shape);
  return grad.reshape(shape);
}

}  // namespace ruccl::autodiff
