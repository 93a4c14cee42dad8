#include "tensor/core/tensor.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"

namespace ruccl {

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Checks the geometry of a view of `storage`, every step in overflow-checked int64: sizes and
// strides >= 0, each stride's byte distance within int64, 0 <= offset <= the storage's element
// count, and (unless the view is empty) its last element inside the storage. Every Tensor passes
// this, so the byte offset of any element, and any stride in bytes, fits int64 and stays inside
// the storage: backends compute pointers without checks of their own.
void check_geometry(const Shape& shape, const Shape& strides, std::int64_t offset,
                    std::size_t element_size, const Storage& storage, const char* op) {
  RUCCL_CHECK(shape.size() == strides.size(), ShapeError, op, ": expected ", shape.size(),
              " strides for shape ", shape, ", got ", strides.size(), " (", strides, ")");
  // In bytes, so the fast path divides nothing; the element count only in messages.
  const auto capacity = [&] {
    return static_cast<std::int64_t>(
        std::min<std::size_t>(storage.nbytes() / element_size, kInt64Max));
  };
  std::int64_t bytes = 0;
  RUCCL_CHECK(offset >= 0 && !byte_size_overflows(offset, element_size, bytes) &&
                  static_cast<std::size_t>(bytes) <= storage.nbytes(),
              IndexError, op, ": expected a storage offset in [0, ", capacity(),
              "] (the storage's elements), got ", offset);
  std::int64_t end = offset;  // one past the last element the view reaches, once incremented
  bool empty = false;
  bool overflow = false;
  for (std::int64_t i = 0; i < shape.size(); ++i) {
    RUCCL_CHECK(shape[i] >= 0, ShapeError, op, ": expected non-negative sizes, got ", shape);
    RUCCL_CHECK(!byte_size_overflows(strides[i], element_size, bytes), ShapeError, op,
                ": expected non-negative strides whose byte distance fits int64, got strides ",
                strides, " (dim ", i, ", ", element_size, " bytes per element)");
    empty = empty || shape[i] == 0;
    std::int64_t span = 0;
    overflow = overflow || (shape[i] > 0 && (mul_overflows(shape[i] - 1, strides[i], span) ||
                                             add_overflows(end, span, end)));
  }
  if (empty) return;  // an empty view touches nothing
  overflow =
      overflow || add_overflows(end, 1, end) || byte_size_overflows(end, element_size, bytes);
  RUCCL_CHECK(!overflow && static_cast<std::size_t>(bytes) <= storage.nbytes(), IndexError, op,
              ": view ", shape, " with strides ", strides, " at offset ", offset,
              " reaches outside its storage of ", capacity(), " elements",
              overflow ? " (its last element's index overflows int64)" : "");
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides,
               std::int64_t offset, DType dtype)
    : Tensor("Tensor", std::move(storage), shape, strides, offset, dtype) {}

Tensor::Tensor(const char* op, std::shared_ptr<Storage> storage, const Shape& shape,
               const Shape& strides, std::int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(shape),
      strides_(strides),
      offset_(offset),
      numel_(shape.numel(op)),
      dtype_(dtype) {
  RUCCL_CHECK(storage_ != nullptr, ValueError, op, ": expected a storage, got none");
  check_geometry(shape_, strides_, offset_, element_size(), *storage_, op);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, const char* op) {
  const std::int64_t n = shape.numel(op);
  std::int64_t bytes = 0;
  RUCCL_CHECK(!byte_size_overflows(n, dtype_size(dtype), bytes), ShapeError, op,
              ": expected a byte size that fits int64, got ", shape, " of ", dtype, " (", n,
              " elements of ", dtype_size(dtype), " bytes)");
  const Shape strides = shape.contiguous_strides(op, dtype_size(dtype));
  std::shared_ptr<Storage> storage;
  try {
    storage = backend_for(device).allocate(static_cast<std::size_t>(bytes), device);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(str(op, ": cannot allocate ", shape, " of ", dtype, " (", bytes,
                               " bytes) on ", device, ": ", e.what()));
  }
  // Geometry valid by construction: contiguous strides, offset 0, exactly the bytes it needs.
  return Tensor(Unchecked{}, std::move(storage), shape, strides, n, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device, "Tensor::zeros");
  t.fill_(0);
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device, "Tensor::ones");
  t.fill_(1);
  return t;
}

Tensor Tensor::full(const Shape& shape, Scalar value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device, "Tensor::full");
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar(Scalar value, DType dtype, Device device) {
  return full(Shape{}, value, dtype, device);
}

Tensor Tensor::from_host(const void* src, const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device, "Tensor::from_vector");
  if (t.nbytes() > 0) backend_for(device).copy_from_host(src, *t.storage_, 0, t.nbytes());
  return t;
}

void Tensor::copy_to_host(void* dst) const {
  if (numel_ == 0) return;
  const Tensor c = contiguous();
  backend_for(c.device())
      .copy_to_host(*c.storage_, static_cast<std::size_t>(c.offset_) * element_size(), dst,
                    c.nbytes());
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

std::int64_t Tensor::size(std::int64_t d) const {
  return shape_[normalize_dim(d, dim(), "Tensor::size")];
}

bool Tensor::is_contiguous() const {
  if (numel_ == 0) return true;  // as torch; and then no size is 0, so `expected` fits below
  std::int64_t expected = 1;
  for (std::int64_t i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  RUCCL_CHECK(defined(), ValueError,
              "Tensor::data_ptr: expected a defined tensor, got an undefined one");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(element_size());
}

// ---- conversion and copies ------------------------------------------------------------------

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  const Tensor c = contiguous();
  Tensor out = empty(shape_, dtype_, target, "Tensor::to");
  if (numel_ == 0) return out;
  const auto offset = static_cast<std::size_t>(c.offset_) * element_size();
  if (c.device().is_cpu()) {
    backend_for(target).copy_from_host(c.data_ptr(), *out.storage_, 0, c.nbytes());
  } else if (target.is_cpu()) {
    backend_for(c.device()).copy_to_host(*c.storage_, offset, out.data_ptr(), c.nbytes());
  } else if (c.device().type == target.type) {
    // Between two devices of one backend (cuda:0 -> cuda:1): the backend's peer copy.
    backend_for(target).copy_bytes(*c.storage_, offset, *out.storage_, 0, c.nbytes());
  } else {
    return c.to(Device::cpu()).to(target);  // two kinds of device: through the host
  }
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype_) return *this;
  Tensor out = empty(shape_, target, device(), "Tensor::to");
  backend_for(device()).copy(*this, out);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device(), "Tensor::clone");
  backend_for(device()).copy(*this, out);
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

void Tensor::copy_(const Tensor& src) const {
  RUCCL_CHECK(src.device() == device(), DeviceError, "Tensor::copy_: expected a source on ",
              device(), ", got one on ", src.device(), "; move it with to(Device) first");
  const Tensor expanded = src.shape() == shape_ ? src : src.expand(shape_);
  backend_for(device()).copy(expanded, *this);
}

void Tensor::fill_(Scalar value) const {
  RUCCL_CHECK(defined(), ValueError,
              "Tensor::fill_: expected a defined tensor, got an undefined one");
  backend_for(device()).fill(*this, value);
}

// ---- views ------------------------------------------------------------------------------------

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, std::int64_t offset) const {
  RUCCL_CHECK(defined(), ValueError,
              "Tensor::as_strided: expected a defined tensor, got an undefined one");
  return Tensor("Tensor::as_strided", storage_, shape, strides, offset, dtype_);
}

namespace {

// Resolves one -1 in a requested shape against an element count.
Shape infer_shape(const Shape& requested, std::int64_t numel, const Shape& from, const char* op) {
  Shape shape = requested;
  std::int64_t known = 1;  // the product of the sizes other than the -1
  bool overflow = false;
  bool has_zero = false;
  std::int64_t infer_at = -1;
  for (std::int64_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RUCCL_CHECK(infer_at < 0, ShapeError, op, ": expected at most one -1 in ", requested);
      infer_at = i;
    } else {
      RUCCL_CHECK(shape[i] >= 0, ShapeError, op, ": expected sizes >= 0 or -1, got ", requested);
      has_zero = has_zero || shape[i] == 0;
      overflow = mul_overflows(known, shape[i], known) || overflow;
    }
  }
  if (has_zero) {  // a zero size wins over an overflow, as in Shape::numel
    known = 0;
    overflow = false;
  }
  if (infer_at >= 0) {
    RUCCL_CHECK(!overflow && known != 0 && numel % known == 0, ShapeError, op,
                ": cannot infer the -1 in ", requested, " for ", numel, " elements of shape ", from,
                overflow ? " (the other sizes multiply past int64)" : "");
    shape[infer_at] = numel / known;
  }
  const std::int64_t got = shape.numel(op);  // throws on an overflowing product
  RUCCL_CHECK(got == numel, ShapeError, op, ": expected a shape with ", numel, " elements (from ",
              from, "), got ", shape, " with ", got);
  return shape;
}

// Strides for viewing (shape, strides) as `target` without a copy, or false when impossible.
// Walks groups of old dims that multiply to groups of new dims (as PyTorch's computeStride).
bool view_strides(const Shape& shape, const Shape& strides, const Shape& target,
                  std::size_t element_size, const char* op, Shape& out) {
  out = target;
  if (shape.numel() <= 1) {  // no element or one (a 0-d tensor too): any strides address it
    out = target.contiguous_strides(op, element_size);
    return true;
  }
  std::int64_t view_d = target.size() - 1;
  std::int64_t chunk_base_stride = strides.size() > 0 ? strides[strides.size() - 1] : 1;
  // Both shapes have numel() >= 2 elements and no size 0, so the partial products of their sizes
  // fit; a product with a stride may not (strides of size-1 dims are arbitrary): checked.
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    std::int64_t chunk_stride = 0;
    const bool overflow = mul_overflows(tensor_numel, chunk_base_stride, chunk_stride);
    if (d == 0 || (shape[d - 1] != 1 && (overflow || strides[d - 1] != chunk_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[view_d] == 1)) {
        if (mul_overflows(view_numel, chunk_base_stride, out[view_d])) return false;
        view_numel *= target[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel_, shape_, "Tensor::view");
  Shape strides;
  RUCCL_CHECK(view_strides(shape_, strides_, shape, element_size(), "Tensor::view", strides),
              ShapeError, "Tensor::view: expected ", "strides compatible with ", shape,
              ", got shape ", shape_, " with strides ", strides_, "; use reshape() to copy");
  return Tensor("Tensor::view", storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel_, shape_, "Tensor::reshape");
  Shape strides;
  if (view_strides(shape_, strides_, shape, element_size(), "Tensor::reshape", strides)) {
    return Tensor("Tensor::reshape", storage_, shape, strides, offset_, dtype_);
  }
  return clone().view(shape);
}

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  d0 = normalize_dim(d0, dim(), "Tensor::transpose");
  d1 = normalize_dim(d1, dim(), "Tensor::transpose");
  Tensor t = *this;
  std::swap(t.shape_[d0], t.shape_[d1]);
  std::swap(t.strides_[d0], t.strides_[d1]);
  return t;
}

Tensor Tensor::permute(const std::vector<std::int64_t>& dims) const {
  RUCCL_CHECK(static_cast<std::int64_t>(dims.size()) == dim(), ShapeError,
              "Tensor::permute: expected ", dim(), " dims, got ", dims.size());
  Tensor t = *this;
  std::array<bool, Shape::kMaxDims> seen{};
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t d = normalize_dim(dims[i], dim(), "Tensor::permute");
    RUCCL_CHECK(!seen[static_cast<std::size_t>(d)], ShapeError,
                "Tensor::permute: expected each dim once, got ", d, " twice");
    seen[static_cast<std::size_t>(d)] = true;
    t.shape_[static_cast<std::int64_t>(i)] = shape_[d];
    t.strides_[static_cast<std::int64_t>(i)] = strides_[d];
  }
  return t;
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  RUCCL_CHECK(dim() > 0, IndexError, "Tensor::narrow: expected a tensor with at least 1 dim, got ",
              defined() ? "a 0-d tensor" : "an undefined tensor");
  d = normalize_dim(d, dim(), "Tensor::narrow");
  const std::int64_t size = shape_[d];
  const std::int64_t first = start < 0 ? start + size : start;  // cannot overflow: size >= 0
  std::int64_t end = 0;
  const bool overflow = add_overflows(first, length, end);
  RUCCL_CHECK(first >= 0 && length >= 0 && !overflow && end <= size, IndexError,
              "Tensor::narrow: expected 0 <= start, 0 <= length and start + length <= size ", size,
              " of dim ", d, ", got start ", start, " and length ", length,
              overflow ? " (start + length overflows int64)" : "");
  Tensor t = *this;
  t.shape_[d] = length;
  // The view starts at element `first` of dim d, as in torch. With length > 0 that element is in
  // this view, so the sum fits; an empty view may start past the storage (start = size on a
  // sparse view), and then keeps this view's offset: it touches nothing.
  std::int64_t moved = 0;
  const bool fits =
      !mul_overflows(first, strides_[d], moved) && !add_overflows(offset_, moved, moved) &&
      (length > 0 || static_cast<std::size_t>(moved) <= storage_->nbytes() / element_size());
  if (fits) t.offset_ = moved;
  t.numel_ = t.shape_.numel();
  return t;
}

Tensor Tensor::select(std::int64_t d, std::int64_t i) const {
  RUCCL_CHECK(dim() > 0, IndexError, "Tensor::select: expected a tensor with at least 1 dim, got ",
              defined() ? "a 0-d tensor" : "an undefined tensor");
  d = normalize_dim(d, dim(), "Tensor::select");
  const std::int64_t size = shape_[d];
  RUCCL_CHECK(i >= -size && i < size, IndexError, "Tensor::select: expected an index in [", -size,
              ", ", size, ") on dim ", d, " of size ", size, ", got ", i);
  return narrow(d, i < 0 ? i + size : i, 1).squeeze(d);
}

Tensor Tensor::expand(const Shape& target) const {
  RUCCL_CHECK(target.size() >= dim(), ShapeError, "Tensor::expand: expected at least ", dim(),
              " dims, got ", target);
  Tensor t = *this;
  t.shape_ = target;
  t.strides_ = target;
  const std::int64_t lead = target.size() - dim();
  for (std::int64_t i = 0; i < target.size(); ++i) {
    const std::int64_t j = i - lead;
    const std::int64_t have = j >= 0 ? shape_[j] : 1;
    std::int64_t want = target[i];
    if (want == -1) {
      RUCCL_CHECK(j >= 0, ShapeError,
                  "Tensor::expand: -1 is not allowed for new leading dims, got ", target);
      want = have;
    }
    RUCCL_CHECK(want >= 0, ShapeError, "Tensor::expand: expected sizes >= 0 or -1, got ", target);
    RUCCL_CHECK(want == have || have == 1, ShapeError, "Tensor::expand: cannot expand ", shape_,
                " to ", target, " (dim ", i, ": expected ", have, " or a 1 to broadcast, got ",
                want, ")");
    t.shape_[i] = want;
    t.strides_[i] = (j >= 0 && have == want) ? strides_[j] : 0;
  }
  t.numel_ = t.shape_.numel("Tensor::expand");  // [1] expanded to [2^40, 2^40] overflows
  return t;
}

Tensor Tensor::squeeze(std::int64_t d) const {
  d = normalize_dim(d, dim(), "Tensor::squeeze");
  if (dim() == 0 || shape_[d] != 1) return *this;
  Tensor t = *this;
  t.shape_.erase(d);
  t.strides_.erase(d);
  return t;
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  d = normalize_dim(d, dim() + 1, "Tensor::unsqueeze");
  Tensor t = *this;
  // Any stride addresses a size-1 dim; torch's stride * size may leave int64 (a huge stride on a
  // size-1 dim), and then the neighbour's stride serves.
  std::int64_t stride = 1;
  std::int64_t stride_bytes = 0;
  if (d < dim() && (mul_overflows(strides_[d], shape_[d], stride) ||
                    byte_size_overflows(stride, element_size(), stride_bytes))) {
    stride = strides_[d];
  }
  t.shape_.insert(d, 1);
  t.strides_.insert(d, stride);
  return t;
}

Tensor Tensor::flatten(std::int64_t start, std::int64_t end) const {
  if (dim() == 0) return reshape(Shape{1});
  start = normalize_dim(start, dim(), "Tensor::flatten");
  end = normalize_dim(end, dim(), "Tensor::flatten");
  RUCCL_CHECK(start <= end, IndexError, "Tensor::flatten: expected start <= end, got ", start,
              " > ", end);
  Shape shape;
  for (std::int64_t i = 0; i < start; ++i) shape.push_back(shape_[i]);
  Shape merged;  // numel() of a sub-shape: it overflows when a zero outside [start, end] hid that
  for (std::int64_t i = start; i <= end; ++i) merged.push_back(shape_[i]);
  shape.push_back(merged.numel("Tensor::flatten"));
  for (std::int64_t i = end + 1; i < dim(); ++i) shape.push_back(shape_[i]);
  return reshape(shape);
}

}  // namespace ruccl
