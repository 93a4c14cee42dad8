// Indexing on Var: backward scatter-adds (repeated indices accumulate).
#include "autodiff/ops/index.h"

#include "autodiff/node.h"
#include "tensor/ops/index.h"

namespace ruccl::autodiff {

Var index_select(const Var& x, std::int64_t dim, const Tensor& index) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "index_select");
  return make_var(ruccl::index_select(x.value(), d, index), "index_select", {x},
                  [index, d](const Tensor& g, GradInputs& grads) {
                    Tensor zeros = Tensor::zeros(grads.input_shape(0), g.dtype(), g.device());
                    grads[0] = ruccl::index_add(zeros, d, index, g);
                  });
}

Var gather(const Var& x, std::int64_t dim, const Tensor& index) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "gather");
  return make_var(ruccl::gather(x.value(), d, index), "gather", {x},
                  [index, d](const Tensor& g, GradInputs& grads) {
                    Tensor zeros = Tensor::zeros(grads.input_shape(0), g.dtype(), g.device());
                    grads[0] = ruccl::scatter_add(zeros, d, index, g);
                  });
}

}  // namespace ruccl::autodiff
