// Frontend of cumsum, sort and topk: validate the tensor, dim, dtype and k, allocate and dispatch
// to the backend's cumsum and sort (topk is the backend sort's first k).
#include "tensor/ops/sort_scan.h"

#include "tensor/backend/backend.h"

namespace ruccl {

namespace {

void check_input(const Tensor& x, Op op, const char* name) {
  RUCCL_CHECK(x.defined(), ValueError, name, ": expected a defined tensor, got an undefined one");
  if (op == Op::Sort) {
    RUCCL_CHECK(x.dtype() != DType::Bool, DTypeError, name,
                ": expected a numeric dtype (F16, BF16, F32, F64, I32, I64), got Bool; convert "
                "with to(DType::I64)");
  }
  const Backend& backend = backend_for(x.device());
  const DType dtype = op == Op::Cumsum && !is_floating(x.dtype()) ? DType::I64 : x.dtype();
  RUCCL_CHECK(backend.supports(op, dtype), NotImplementedError, name, ": not implemented for ",
              dtype, " on ", x.device(), " (backend ", backend.name(), ")");
}

ValuesIndices sort_impl(const char* name, const Tensor& x, std::int64_t k, std::int64_t dim,
                        bool descending) {
  const std::int64_t d = normalize_dim(dim, x.dim(), name);
  if (x.dim() == 0) {
    ValuesIndices r = sort_impl(name, x.unsqueeze(0), k, 0, descending);
    return {r.values.squeeze(0), r.indices.squeeze(0)};
  }
  Shape shape = x.shape();
  shape[d] = k;
  ValuesIndices r{Tensor::empty(shape, x.dtype(), x.device(), name),
                  Tensor::empty(shape, DType::I64, x.device(), name)};
  if (r.values.numel() > 0) backend_for(x.device()).sort(x, d, descending, r.values, r.indices);
  return r;
}

}  // namespace

Tensor cumsum(const Tensor& x, std::int64_t dim, bool reverse) {
  check_input(x, Op::Cumsum, "cumsum");
  const std::int64_t d = normalize_dim(dim, x.dim(), "cumsum");
  if (x.dim() == 0) return cumsum(x.unsqueeze(0), 0, reverse).squeeze(0);
  const Tensor in = is_floating(x.dtype()) ? x : x.to(DType::I64);
  Tensor out = Tensor::empty(in.shape(), in.dtype(), in.device(), "cumsum");
  if (out.numel() > 0) backend_for(in.device()).cumsum(in, d, reverse, out);
  return out;
}

ValuesIndices sort(const Tensor& x, std::int64_t dim, bool descending, bool /*stable*/) {
  check_input(x, Op::Sort, "sort");
  const std::int64_t n = x.dim() == 0 ? 1 : x.shape()[normalize_dim(dim, x.dim(), "sort")];
  return sort_impl("sort", x, n, dim, descending);
}

ValuesIndices topk(const Tensor& x, std::int64_t k, std::int64_t dim, bool largest,
                   bool /*sorted*/) {
  check_input(x, Op::Sort, "topk");
  const std::int64_t n = x.dim() == 0 ? 1 : x.shape()[normalize_dim(dim, x.dim(), "topk")];
  RUCCL_CHECK(k >= 0 && k <= n, ValueError, "topk: expected k in [0, ", n, "] (the size of dim ",
              dim, "), got ", k);
  return sort_impl("topk", x, k, dim, largest);
}

}  // namespace ruccl
