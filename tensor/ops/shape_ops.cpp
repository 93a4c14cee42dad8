// cat, stack, split, chunk. cat copies each input into a narrow() view of the output through
// Tensor::copy_ (the backend's strided copy, which also converts dtypes); split and chunk return
// narrow() views.
#include "tensor/ops/shape_ops.h"

#include "tensor/core/checked_arithmetic.h"

namespace ruccl {

namespace {

// PyTorch skips 1-d empty tensors in cat whatever the other shapes (legacy behaviour kept there
// so torch.cat([x, torch.empty(0)]) works); we do the same.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// "[1, 2, 3]"
std::string list(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(values[i]);
  }
  return out + "]";
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  RUCCL_CHECK(!tensors.empty(), ValueError, "cat: expected a non-empty list of tensors, got none");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    RUCCL_CHECK(tensors[i].defined(), ValueError, "cat: expected defined tensors, got tensor ", i,
                " undefined");
  }
  // The first tensor that is not a legacy empty one sets the rank and the other sizes.
  std::size_t ref = 0;
  while (ref + 1 < tensors.size() && is_legacy_empty(tensors[ref])) ++ref;
  const Tensor& first = tensors[ref];
  RUCCL_CHECK(first.dim() > 0, ShapeError, "cat: expected tensors with at least 1 dim, got tensor ",
              ref, " with shape ", first.shape());
  dim = normalize_dim(dim, first.dim(), "cat");

  DType dtype = first.dtype();
  std::int64_t total = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    RUCCL_CHECK(t.device() == first.device(), DeviceError, "cat: expected every tensor on ",
                first.device(), " (like tensor ", ref, "), got tensor ", i, " on ", t.device());
    dtype = promote_types(dtype, t.dtype());
    if (i != ref && is_legacy_empty(t)) continue;
    RUCCL_CHECK(t.dim() == first.dim(), ShapeError, "cat: expected tensor ", i, " to have ",
                first.dim(), " dims (like tensor ", ref, "), got shape ", t.shape());
    for (std::int64_t d = 0; d < t.dim(); ++d) {
      RUCCL_CHECK(d == dim || t.size(d) == first.size(d), ShapeError, "cat: expected tensor ", i,
                  " to have size ", first.size(d), " at dim ", d, " (like tensor ", ref,
                  "; only dim ", dim, " may differ), got shape ", t.shape(), " and ",
                  first.shape());
    }
    RUCCL_CHECK(!add_overflows(total, t.size(dim), total), ShapeError,
                "cat: expected a total size along dim ", dim,
                " that fits int64, got it overflowing ", "at tensor ", i, " (size ", t.size(dim),
                ")");
  }

  Shape shape = first.shape();
  shape[dim] = total;
  Tensor out = Tensor::empty(shape, dtype, first.device(), "cat");
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (i != ref && is_legacy_empty(t)) continue;
    const std::int64_t length = t.size(dim);
    if (length > 0) out.narrow(dim, offset, length).copy_(t);
    offset += length;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
  RUCCL_CHECK(!tensors.empty(), ValueError,
              "stack: expected a non-empty list of tensors, got none");
  const Tensor& first = tensors[0];
  RUCCL_CHECK(first.defined(), ValueError,
              "stack: expected defined tensors, got tensor 0 undefined");
  dim = normalize_dim(dim, first.dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    RUCCL_CHECK(tensors[i].defined(), ValueError, "stack: expected defined tensors, got tensor ", i,
                " undefined");
    RUCCL_CHECK(tensors[i].shape() == first.shape(), ShapeError,
                "stack: expected every tensor to have shape ", first.shape(),
                " (like tensor 0), got tensor ", i, " with shape ", tensors[i].shape());
    expanded.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(expanded, dim);
}

std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim) {
  RUCCL_CHECK(x.defined(), ValueError, "split: expected a defined tensor, got an undefined one");
  dim = normalize_dim(dim, x.dim(), "split");
  const std::int64_t size = x.size(dim);
  RUCCL_CHECK(split_size > 0 || (split_size == 0 && size == 0), ValueError,
              "split: expected a split_size > 0 (or 0 for an empty dim), got ", split_size,
              " for dim ", dim, " of size ", size);
  if (size == 0) return {x};
  std::vector<Tensor> pieces;
  for (std::int64_t start = 0; start < size;) {  // start + split_size may overflow: step by length
    const std::int64_t length = std::min(split_size, size - start);
    pieces.push_back(x.narrow(dim, start, length));
    start += length;
  }
  return pieces;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes,
                          std::int64_t dim) {
  RUCCL_CHECK(x.defined(), ValueError, "split: expected a defined tensor, got an undefined one");
  dim = normalize_dim(dim, x.dim(), "split");
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    RUCCL_CHECK(sizes[i] >= 0, ShapeError, "split: expected non-negative sizes, got ", sizes[i],
                " at position ", i);
    RUCCL_CHECK(!add_overflows(sum, sizes[i], sum), ShapeError,
                "split: expected sizes that sum to ", x.size(dim), " (dim ", dim, " of shape ",
                x.shape(), "), got ", list(sizes), ", whose sum overflows int64 at position ", i);
  }
  RUCCL_CHECK(sum == x.size(dim), ShapeError, "split: expected sizes that sum to ", x.size(dim),
              " (dim ", dim, " of shape ", x.shape(), "), got ", list(sizes), " summing to ", sum);
  std::vector<Tensor> pieces;
  std::int64_t start = 0;
  for (std::int64_t length : sizes) {
    pieces.push_back(x.narrow(dim, start, length));
    start += length;
  }
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) {
  RUCCL_CHECK(x.defined(), ValueError, "chunk: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(chunks > 0, ValueError, "chunk: expected chunks > 0, got ", chunks);
  dim = normalize_dim(dim, x.dim(), "chunk");
  const std::int64_t size = x.size(dim);
  if (size == 0) return std::vector<Tensor>(static_cast<std::size_t>(chunks), x);  // as torch
  // ceil(size / chunks) without size + chunks - 1, which may overflow
  return split(x, size / chunks + (size % chunks != 0 ? 1 : 0), dim);
}

}  // namespace ruccl
