// Frontends of the index ops: shape and dtype checks, output allocation, dispatch. The backend
// checks every index against its bound (negative indices are errors, not counted from the end)
// while it runs, so a device is never synced for a host check.
#include "tensor/ops/index.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "tensor/backend/backend.h"

namespace ruccl {

namespace {

void check_defined(const Tensor& t, const char* op, const char* what) {
  RUCCL_CHECK(t.defined(), ValueError, op, ": expected a defined ", what,
              ", got an undefined tensor");
}

void check_index_tensor(const Tensor& x, const Tensor& index, const char* op) {
  check_defined(x, op, "input");
  check_defined(index, op, "index");
  RUCCL_CHECK(index.dtype() == DType::I64 || index.dtype() == DType::I32, DTypeError, op,
              ": expected an I64 or I32 index, got ", index.dtype());
  RUCCL_CHECK(index.device() == x.device(), DeviceError, op, ": expected the index on ", x.device(),
              " like the input, got ", index.device());
}

// Calls fn(value, flat_position) for every element of an I32/I64 tensor, in row-major order.
template <typename Fn>
void for_each_index(const Tensor& index, Fn&& fn) {
  const Tensor host = index.to(Device::cpu()).contiguous();
  if (host.dtype() == DType::I64) {
    const std::int64_t* p = host.data<std::int64_t>();
    for (std::int64_t i = 0; i < host.numel(); ++i) fn(p[i], i);
  } else {
    const std::int32_t* p = host.data<std::int32_t>();
    for (std::int64_t i = 0; i < host.numel(); ++i) fn(static_cast<std::int64_t>(p[i]), i);
  }
}

// A 0-d index acts as a 1-d index of one element.
Tensor as_1d_index(const Tensor& index, const char* op) {
  RUCCL_CHECK(index.dim() <= 1, ShapeError, op, ": expected a 1-d index, got shape ",
              index.shape());
  return index.dim() == 0 ? index.unsqueeze(0) : index;
}

}  // namespace

Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index) {
  check_index_tensor(x, index, "index_select");
  RUCCL_CHECK(x.dim() >= 1, ShapeError, "index_select: expected an input with at least 1 dim, ",
              "got shape ", x.shape());
  dim = normalize_dim(dim, x.dim(), "index_select");
  const Tensor idx = as_1d_index(index, "index_select");
  Shape shape = x.shape();
  shape[dim] = idx.size(0);
  Tensor out = Tensor::empty(shape, x.dtype(), x.device(), "index_select");
  backend_for(x.device()).index_select(x, dim, idx, out);
  return out;
}

Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index) {
  check_index_tensor(x, index, "gather");
  RUCCL_CHECK(index.dim() == x.dim(), ShapeError, "gather: expected an index with ", x.dim(),
              " dims like the input ", x.shape(), ", got shape ", index.shape());
  if (x.dim() == 0) return gather(x.unsqueeze(0), 0, index.unsqueeze(0)).squeeze(0);
  dim = normalize_dim(dim, x.dim(), "gather");
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    RUCCL_CHECK(d == dim || index.size(d) <= x.size(d), ShapeError, "gather: expected index.shape[",
                d, "] <= input.shape[", d, "] (dims other than ", dim, "), got index ",
                index.shape(), " and input ", x.shape());
  }
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device(), "gather");
  backend_for(x.device()).gather(x, dim, index, out);
  return out;
}

Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  check_index_tensor(x, index, "scatter_add");
  check_defined(src, "scatter_add", "src");
  RUCCL_CHECK(src.device() == x.device(), DeviceError, "scatter_add: expected src on ", x.device(),
              " like the input, got ", src.device());
  RUCCL_CHECK(src.dtype() == x.dtype(), DTypeError, "scatter_add: expected src of dtype ",
              x.dtype(), " like the input, got ", src.dtype());
  RUCCL_CHECK(x.dtype() != DType::Bool, DTypeError,
              "scatter_add: expected a numeric dtype, got Bool");
  RUCCL_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), ShapeError,
              "scatter_add: expected input, index and src with the same number of dims, got ",
              x.shape(), ", ", index.shape(), " and ", src.shape());
  if (x.dim() == 0) {
    return scatter_add(x.unsqueeze(0), 0, index.unsqueeze(0), src.unsqueeze(0)).squeeze(0);
  }
  dim = normalize_dim(dim, x.dim(), "scatter_add");
  Tensor src_part = src;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    RUCCL_CHECK(index.size(d) <= src.size(d), ShapeError, "scatter_add: expected index.shape[", d,
                "] <= src.shape[", d, "], got index ", index.shape(), " and src ", src.shape());
    RUCCL_CHECK(d == dim || index.size(d) <= x.size(d), ShapeError,
                "scatter_add: expected index.shape[", d, "] <= input.shape[", d,
                "] (dims other than ", dim, "), got index ", index.shape(), " and input ",
                x.shape());
    src_part = src_part.narrow(d, 0, index.size(d));
  }
  Tensor out = x.clone();
  backend_for(x.device()).scatter_add(out, dim, index, src_part);
  return out;
}

Tensor index_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  check_index_tensor(x, index, "index_add");
  check_defined(src, "index_add", "src");
  RUCCL_CHECK(src.device() == x.device(), DeviceError, "index_add: expected src on ", x.device(),
              " like the input, got ", src.device());
  RUCCL_CHECK(src.dtype() == x.dtype(), DTypeError, "index_add: expected src of dtype ", x.dtype(),
              " like the input, got ", src.dtype());
  RUCCL_CHECK(x.dtype() != DType::Bool, DTypeError,
              "index_add: expected a numeric dtype, got Bool");
  RUCCL_CHECK(x.dim() >= 1, ShapeError, "index_add: expected an input with at least 1 dim, got ",
              "shape ", x.shape());
  dim = normalize_dim(dim, x.dim(), "index_add");
  const Tensor idx = as_1d_index(index, "index_add");
  Shape expected = x.shape();
  expected[dim] = idx.size(0);
  RUCCL_CHECK(src.shape() == expected, ShapeError, "index_add: expected src of shape ", expected,
              " (the input's with dim ", dim, " the index length), got ", src.shape());
  Tensor out = x.clone();
  backend_for(x.device()).index_add(out, dim, idx, src);
  return out;
}

Tensor one_hot(const Tensor& indices, std::int64_t num_classes) {
  check_defined(indices, "one_hot", "index");
  RUCCL_CHECK(indices.dtype() == DType::I64 || indices.dtype() == DType::I32, DTypeError,
              "one_hot: expected I64 or I32 indices, got ", indices.dtype());
  RUCCL_CHECK(num_classes >= -1, ValueError,
              "one_hot: expected num_classes >= 0 (or -1 to infer it), got ", num_classes);
  if (num_classes == -1) {
    RUCCL_CHECK(indices.numel() > 0, ValueError,
                "one_hot: expected indices to infer num_classes from, got an empty tensor");
    // Inferring the class count reads the indices on the host (as torch's one_hot does): pass
    // num_classes to keep a device from syncing.
    std::int64_t largest = 0;
    for_each_index(indices, [&](std::int64_t v, std::int64_t) { largest = std::max(largest, v); });
    RUCCL_CHECK(largest < std::numeric_limits<std::int64_t>::max(), ValueError,
                "one_hot: expected a largest index below 2^63 - 1 to infer num_classes, got ",
                largest);
    num_classes = largest + 1;
  }
  Shape shape = indices.shape();
  shape.push_back(num_classes);
  Tensor out = Tensor::empty(shape, DType::I64, indices.device(), "one_hot");
  backend_for(indices.device()).one_hot(indices, out);
  return out;
}

}  // namespace ruccl
