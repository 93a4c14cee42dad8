// cumsum, sort and topk on Var, each backward beside its forward.
#include "autodiff/ops/sort_scan.h"

#include "autodiff/node.h"
#include "tensor/ops/index.h"
#include "tensor/ops/sort_scan.h"

namespace ruccl::autodiff {

namespace {

// The values of a sort/topk along `dim` with their gradient scattered back to x's positions
// (each position appears at most once per row, so the scatter adds nothing up).
VarIndices scatter_back(const Var& x, ValuesIndices r, std::int64_t dim, const char* name) {
  Var values = make_var(std::move(r.values), name, {x},
                        [indices = r.indices, dim](const Tensor& g, GradInputs& grads) {
                          const Tensor zeros =
                              Tensor::zeros(grads.input_shape(0), g.dtype(), g.device());
                          grads[0] = ruccl::scatter_add(zeros, dim, indices, g);
                        });
  return {std::move(values), std::move(r.indices)};
}

}  // namespace

Var cumsum(const Var& x, std::int64_t dim) {
  // out[i] = sum_{j <= i} x[j], so d/dx[j] = sum_{i >= j} g[i]: the cumsum of g from the end.
  return make_var(
      ruccl::cumsum(x.value(), dim), "cumsum", {x},
      [dim](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::cumsum(g, dim, true); });
}

VarIndices sort(const Var& x, std::int64_t dim, bool descending, bool stable) {
  return scatter_back(x, ruccl::sort(x.value(), dim, descending, stable), dim, "sort");
}

VarIndices topk(const Var& x, std::int64_t k, std::int64_t dim, bool largest, bool sorted) {
  return scatter_back(x, ruccl::topk(x.value(), k, dim, largest, sorted), dim, "topk");
}

}  // namespace ruccl::autodiff
