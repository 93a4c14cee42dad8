// Frontend of the reductions and softmax: validate dims (in range, each once) and dtypes, pick the
// output dtype, allocate the keepdim-shaped output and dispatch to the backend; a result without
// keepdim is a view of it. var is composed from mean, sub, mul, sum and div.
#include "tensor/ops/reduce.h"

#include <algorithm>
#include <array>
#include <span>

#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"

namespace ruccl {

namespace {

// A validated set of dims to reduce, sorted, without heap allocation.
struct DimSet {
  std::array<std::int64_t, Shape::kMaxDims> list{};
  std::array<bool, Shape::kMaxDims> reduced{};
  std::int64_t count = 0;

  std::span<const std::int64_t> span() const {
    return {list.data(), static_cast<std::size_t>(count)};
  }
};

void check_defined(const Tensor& t, const char* op) {
  RUCCL_CHECK(t.defined(), ValueError, op, ": expected a defined tensor, got an undefined one");
}

// `dims` (empty: all) of x, normalised; a 0-d tensor accepts 0 and -1 and reduces nothing.
DimSet parse_dims(const Tensor& x, std::span<const std::int64_t> dims, const char* op) {
  DimSet set;
  const std::int64_t ndim = x.dim();
  if (dims.empty()) {
    for (std::int64_t d = 0; d < ndim; ++d) set.reduced[static_cast<std::size_t>(d)] = true;
  }
  for (const std::int64_t dim : dims) {
    const std::int64_t d = normalize_dim(dim, ndim, op);
    if (ndim == 0) continue;
    RUCCL_CHECK(!set.reduced[static_cast<std::size_t>(d)], IndexError, op,
                ": expected each dim at most once, got dim ", d, " twice");
    set.reduced[static_cast<std::size_t>(d)] = true;
  }
  for (std::int64_t d = 0; d < ndim; ++d) {
    if (set.reduced[static_cast<std::size_t>(d)])
      set.list[static_cast<std::size_t>(set.count++)] = d;
  }
  return set;
}

DimSet single_dim(const Tensor& x, std::int64_t dim, const char* op) {
  return parse_dims(x, std::span<const std::int64_t>(&dim, 1), op);
}

void check_non_empty(const Tensor& x, const DimSet& dims, const char* op) {
  for (std::int64_t k = 0; k < dims.count; ++k) {
    const std::int64_t d = dims.list[static_cast<std::size_t>(k)];
    RUCCL_CHECK(x.shape()[d] > 0, IndexError, op, ": expected a non-empty dim to reduce, got dim ",
                d, " of size 0 in shape ", x.shape(), " (there is no ", op, " of nothing)");
  }
}

void check_floating(DType dtype, const char* op) {
  RUCCL_CHECK(is_floating(dtype), DTypeError, op, ": expected a floating dtype (F16, BF16, F32, ",
              "F64), got ", dtype, "; convert with to(DType::F32)");
}

// Sum/Prod result dtype: I64 for integers and Bool, the input's for floating dtypes.
DType accumulate_dtype(DType dtype) { return is_floating(dtype) ? dtype : DType::I64; }

Tensor reduce_op(Op op, const char* name, const Tensor& x, const DimSet& dims, bool keepdim,
                 DType out_dtype) {
  Backend& backend = backend_for(x.device());
  RUCCL_CHECK(backend.supports(op, x.dtype()), NotImplementedError, name, ": not implemented for ",
              x.dtype(), " on ", x.device(), " (backend ", backend.name(), ")");
  Shape keep = x.shape();
  for (std::int64_t k = 0; k < dims.count; ++k) keep[dims.list[static_cast<std::size_t>(k)]] = 1;
  Tensor out = Tensor::empty(keep, out_dtype, x.device(), name);
  backend.reduce(op, x, dims.span(), out);
  if (keepdim || dims.count == 0) return out;
  Shape shape;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (!dims.reduced[static_cast<std::size_t>(d)]) shape.push_back(x.shape()[d]);
  }
  // a view of the fresh output
  return out.as_strided(shape, shape.contiguous_strides(name, out.element_size()), 0);
}

Tensor sum_impl(const Tensor& x, std::span<const std::int64_t> dims, bool keepdim) {
  check_defined(x, "sum");
  return reduce_op(Op::Sum, "sum", x, parse_dims(x, dims, "sum"), keepdim,
                   accumulate_dtype(x.dtype()));
}

Tensor mean_impl(const Tensor& x, std::span<const std::int64_t> dims, bool keepdim) {
  check_defined(x, "mean");
  check_floating(x.dtype(), "mean");
  return reduce_op(Op::Mean, "mean", x, parse_dims(x, dims, "mean"), keepdim, x.dtype());
}

Tensor extreme(Op op, const char* name, const Tensor& x, const DimSet& dims, bool keepdim) {
  check_non_empty(x, dims, name);
  return reduce_op(op, name, x, dims, keepdim, x.dtype());
}

Tensor arg_extreme(Op op, const char* name, const Tensor& x, std::int64_t dim, bool keepdim) {
  check_defined(x, name);
  RUCCL_CHECK(x.dtype() != DType::Bool, DTypeError, name,
              ": expected a numeric dtype, got Bool; convert with to(DType::I64)");
  const DimSet dims = single_dim(x, dim, name);
  if (x.dim() == 0) return Tensor::zeros(Shape{}, DType::I64, x.device());
  check_non_empty(x, dims, name);
  return reduce_op(op, name, x, dims, keepdim, DType::I64);
}

// x as a 1-d tensor (unsqueeze for a 0-d one: reshape of a 0-d tensor goes through view).
Tensor flat(const Tensor& x) { return x.dim() == 0 ? x.unsqueeze(0) : x.reshape(Shape{-1}); }

Tensor softmax_impl(Op op, const char* name, const Tensor& x, std::int64_t dim) {
  check_defined(x, name);
  check_floating(x.dtype(), name);
  const std::int64_t d = normalize_dim(dim, x.dim(), name);
  if (x.dim() == 0) return softmax_impl(op, name, x.unsqueeze(0), 0).squeeze(0);
  Backend& backend = backend_for(x.device());
  RUCCL_CHECK(backend.supports(op, x.dtype()), NotImplementedError, name, ": not implemented for ",
              x.dtype(), " on ", x.device(), " (backend ", backend.name(), ")");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), name);
  backend.softmax(op, x, d, out);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_impl(x, dims, keepdim);
}
Tensor sum(const Tensor& x, std::int64_t dim, bool keepdim) {
  return sum_impl(x, std::span<const std::int64_t>(&dim, 1), keepdim);
}
Tensor sum(const Tensor& x) { return sum_impl(x, {}, false); }

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return mean_impl(x, dims, keepdim);
}
Tensor mean(const Tensor& x, std::int64_t dim, bool keepdim) {
  return mean_impl(x, std::span<const std::int64_t>(&dim, 1), keepdim);
}
Tensor mean(const Tensor& x) { return mean_impl(x, {}, false); }

Tensor prod(const Tensor& x, std::int64_t dim, bool keepdim) {
  check_defined(x, "prod");
  return reduce_op(Op::Prod, "prod", x, single_dim(x, dim, "prod"), keepdim,
                   accumulate_dtype(x.dtype()));
}
Tensor prod(const Tensor& x) {
  check_defined(x, "prod");
  return reduce_op(Op::Prod, "prod", x, parse_dims(x, {}, "prod"), false,
                   accumulate_dtype(x.dtype()));
}

Tensor max(const Tensor& x, std::int64_t dim, bool keepdim) {
  check_defined(x, "max");
  return extreme(Op::Max, "max", x, single_dim(x, dim, "max"), keepdim);
}
Tensor max(const Tensor& x) {
  check_defined(x, "max");
  return extreme(Op::Max, "max", x, parse_dims(x, {}, "max"), false);
}
Tensor min(const Tensor& x, std::int64_t dim, bool keepdim) {
  check_defined(x, "min");
  return extreme(Op::Min, "min", x, single_dim(x, dim, "min"), keepdim);
}
Tensor min(const Tensor& x) {
  check_defined(x, "min");
  return extreme(Op::Min, "min", x, parse_dims(x, {}, "min"), false);
}

Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  return arg_extreme(Op::Argmax, "argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim) {
  return arg_extreme(Op::Argmin, "argmin", x, dim, keepdim);
}
Tensor argmax(const Tensor& x) {
  check_defined(x, "argmax");
  return arg_extreme(Op::Argmax, "argmax", flat(x), 0, false);
}
Tensor argmin(const Tensor& x) {
  check_defined(x, "argmin");
  return arg_extreme(Op::Argmin, "argmin", flat(x), 0, false);
}

Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims, std::int64_t correction,
           bool keepdim) {
  check_defined(x, "var");
  check_floating(x.dtype(), "var");
  RUCCL_CHECK(correction >= 0, ValueError, "var: expected a correction >= 0, got ", correction);
  if (x.dtype() == DType::F16 || x.dtype() == DType::BF16) {  // two passes in F32, round once
    return var(x.to(DType::F32), dims, correction, keepdim).to(x.dtype());
  }
  const DimSet set = parse_dims(x, dims, "var");
  std::int64_t n = 1;
  for (std::int64_t k = 0; k < set.count; ++k)
    n *= x.shape()[set.list[static_cast<std::size_t>(k)]];
  const Tensor centred = x - reduce_op(Op::Mean, "var", x, set, true, x.dtype());
  const Tensor squares = reduce_op(Op::Sum, "var", centred * centred, set, keepdim, x.dtype());
  return squares / static_cast<double>(std::max<std::int64_t>(n - correction, 0));
}
Tensor var(const Tensor& x, std::int64_t dim, std::int64_t correction, bool keepdim) {
  return var(x, std::vector<std::int64_t>{dim}, correction, keepdim);
}

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return softmax_impl(Op::Softmax, "softmax", x, dim);
}
Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return softmax_impl(Op::LogSoftmax, "log_softmax", x, dim);
}

}  // namespace ruccl
