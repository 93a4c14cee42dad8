// Indexing on Var: backward scatter-adds (repeated indices accumulate).
#include "autodiff/ops/index.h"

#include "autodiff/node.h"
#include "tensor/ops/index.h"
#include "tensor/ops/indexing.h"

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

Var index(const Var& x, std::span<const indexing::TensorIndex> indices) {
  ruccl::detail::IndexPlan plan =
      ruccl::detail::plan_index(x.shape(), x.value().device(), indices, "index");
  Tensor out = plan.apply(x.value());
  if (!should_record({x})) return Var(std::move(out));
  return make_var(std::move(out), "index", {x},
                  [plan = std::move(plan)](const Tensor& g, GradInputs& grads) {
                    Tensor full = Tensor::zeros(grads.input_shape(0), g.dtype(), g.device());
                    Tensor view = plan.view(full);
                    if (plan.tensor_dim < 0) {
                      view.copy_(g);
                    } else {
                      Tensor zeros = Tensor::zeros(view.shape(), g.dtype(), g.device());
                      view.copy_(ruccl::index_add(zeros, plan.tensor_dim, plan.tensor_index, g));
                    }
                    grads[0] = full;
                  });
}

Var index(const Var& x, std::initializer_list<indexing::TensorIndex> indices) {
  return index(x, std::span<const indexing::TensorIndex>(indices.begin(), indices.size()));
}

}  // namespace ruccl::autodiff
