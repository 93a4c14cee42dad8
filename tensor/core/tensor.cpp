#include "tensor/core/tensor.h"

#include <algorithm>
#include <sstream>

#include "tensor/backend/backend.h"
#include "tensor/ops/elementwise.h"

namespace ruccl {

namespace {

// Checks that a strided view stays inside its storage.
void check_in_bounds(const Shape& shape, const Shape& strides, std::int64_t offset,
                     std::size_t element_size, const Storage& storage, const char* op) {
  RUCCL_CHECK(offset >= 0, IndexError, op, ": expected a non-negative storage offset, got ",
              offset);
  std::int64_t lo = offset;
  std::int64_t hi = offset;
  for (std::int64_t i = 0; i < shape.size(); ++i) {
    RUCCL_CHECK(shape[i] >= 0, ShapeError, op, ": expected non-negative sizes, got ", shape);
    if (shape[i] == 0) return;  // an empty view touches nothing
    const std::int64_t span = (shape[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  RUCCL_CHECK(lo >= 0 && static_cast<std::size_t>(hi + 1) * element_size <= storage.nbytes(),
              IndexError, op, ": view ", shape, " with strides ", strides, " at offset ", offset,
              " reaches outside its storage of ", storage.nbytes() / element_size, " elements");
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides,
               std::int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(shape),
      strides_(strides),
      offset_(offset),
      numel_(shape.numel()),
      dtype_(dtype) {
  RUCCL_ASSERT(strides_.size() == shape_.size());
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  const std::int64_t n = shape.numel();  // validates sizes and overflow
  const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
  RUCCL_CHECK(n == 0 || bytes / static_cast<std::size_t>(n) == dtype_size(dtype), ShapeError,
              "Tensor::empty: byte size of shape ", shape, " overflows");
  auto storage = backend_for(device).allocate(bytes, device);
  return Tensor(std::move(storage), shape, shape.contiguous_strides(), 0, dtype);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}

Tensor Tensor::full(const Shape& shape, Scalar value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::scalar(Scalar value, DType dtype, Device device) {
  return full(Shape{}, value, dtype, device);
}

Tensor Tensor::from_host(const void* src, const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
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
  std::int64_t expected = 1;
  for (std::int64_t i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (shape_[i] == 0) return true;
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

std::string Tensor::to_string() const {
  std::ostringstream out;
  if (!defined()) return "Tensor(undefined)";
  out << "Tensor(shape=" << shape_ << ", dtype=" << dtype_ << ", device=" << device() << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.to_string(); }

// ---- conversion and copies ------------------------------------------------------------------

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  const Tensor c = contiguous();
  Tensor out = empty(shape_, dtype_, target);
  if (numel_ == 0) return out;
  // Host-staged: device -> host -> device. Direct peer copies are the CUDA backend's business.
  if (c.device().is_cpu()) {
    backend_for(target).copy_from_host(c.data_ptr(), *out.storage_, 0, c.nbytes());
  } else if (target.is_cpu()) {
    backend_for(c.device())
        .copy_to_host(*c.storage_, static_cast<std::size_t>(c.offset_) * element_size(),
                      out.data_ptr(), c.nbytes());
  } else {
    return c.to(Device::cpu()).to(target);
  }
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype_) return *this;
  Tensor out = empty(shape_, target, device());
  backend_for(device()).copy(*this, out);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  backend_for(device()).copy(*this, out);
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

void Tensor::copy_(const Tensor& src) {
  RUCCL_CHECK(src.device() == device(), DeviceError, "Tensor::copy_: expected a source on ",
              device(), ", got one on ", src.device(), "; move it with to(Device) first");
  const Tensor expanded = src.shape() == shape_ ? src : src.expand(shape_);
  backend_for(device()).copy(expanded, *this);
}

void Tensor::fill_(Scalar value) {
  RUCCL_CHECK(defined(), ValueError,
              "Tensor::fill_: expected a defined tensor, got an undefined one");
  backend_for(device()).fill(*this, value);
}

// ---- views ------------------------------------------------------------------------------------

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, std::int64_t offset) const {
  RUCCL_CHECK(shape.size() == strides.size(), ShapeError, "Tensor::as_strided: expected ",
              shape.size(), " strides for shape ", shape, ", got ", strides.size());
  check_in_bounds(shape, strides, offset, element_size(), *storage_, "Tensor::as_strided");
  return Tensor(storage_, shape, strides, offset, dtype_);
}

namespace {

// Resolves one -1 in a requested shape against an element count.
Shape infer_shape(const Shape& requested, std::int64_t numel, const Shape& from, const char* op) {
  Shape shape = requested;
  std::int64_t known = 1;
  std::int64_t infer_at = -1;
  for (std::int64_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RUCCL_CHECK(infer_at < 0, ShapeError, op, ": expected at most one -1 in ", requested);
      infer_at = i;
    } else {
      RUCCL_CHECK(shape[i] >= 0, ShapeError, op, ": expected sizes >= 0 or -1, got ", requested);
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    RUCCL_CHECK(known != 0 && numel % known == 0, ShapeError, op, ": cannot infer the -1 in ",
                requested, " for ", numel, " elements of shape ", from);
    shape[infer_at] = numel / known;
  }
  RUCCL_CHECK(shape.numel() == numel, ShapeError, op, ": expected a shape with ", numel,
              " elements (from ", from, "), got ", shape, " with ", shape.numel());
  return shape;
}

// Strides for viewing (shape, strides) as `target` without a copy, or false when impossible.
// Walks groups of old dims that multiply to groups of new dims (as PyTorch's computeStride).
bool view_strides(const Shape& shape, const Shape& strides, const Shape& target, Shape& out) {
  out = target;
  if (shape.numel() <= 1) {  // no element or one (a 0-d tensor too): any strides address it
    out = target.contiguous_strides();
    return true;
  }
  std::int64_t view_d = target.size() - 1;
  std::int64_t chunk_base_stride = strides.size() > 0 ? strides[strides.size() - 1] : 1;
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
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
  RUCCL_CHECK(view_strides(shape_, strides_, shape, strides), ShapeError, "Tensor::view: expected ",
              "strides compatible with ", shape, ", got shape ", shape_, " with strides ", strides_,
              "; use reshape() to copy");
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel_, shape_, "Tensor::reshape");
  Shape strides;
  if (view_strides(shape_, strides_, shape, strides)) {
    return Tensor(storage_, shape, strides, offset_, dtype_);
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
  d = normalize_dim(d, dim(), "Tensor::narrow");
  if (start < 0) start += shape_[d];
  RUCCL_CHECK(start >= 0 && length >= 0 && start + length <= shape_[d], IndexError,
              "Tensor::narrow: expected 0 <= start and start + length <= ", shape_[d], " on dim ",
              d, ", got start ", start, " and length ", length);
  Tensor t = *this;
  t.shape_[d] = length;
  t.offset_ += start * strides_[d];
  t.numel_ = t.shape_.numel();
  return t;
}

Tensor Tensor::select(std::int64_t d, std::int64_t i) const {
  d = normalize_dim(d, dim(), "Tensor::select");
  if (i < 0) i += shape_[d];
  RUCCL_CHECK(i >= 0 && i < shape_[d], IndexError, "Tensor::select: expected an index in [0, ",
              shape_[d], ") on dim ", d, ", got ", i);
  return narrow(d, i, 1).squeeze(d);
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
    RUCCL_CHECK(want == have || have == 1, ShapeError, "Tensor::expand: cannot expand ", shape_,
                " to ", target, " (dim ", i, ": expected ", have, " or a 1 to broadcast, got ",
                want, ")");
    t.shape_[i] = want;
    t.strides_[i] = (j >= 0 && have == want) ? strides_[j] : 0;
  }
  t.numel_ = t.shape_.numel();
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
  const std::int64_t stride = d < dim() ? strides_[d] * shape_[d] : 1;
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
  std::int64_t merged = 1;
  for (std::int64_t i = start; i <= end; ++i) merged *= shape_[i];
  shape.push_back(merged);
  for (std::int64_t i = end + 1; i < dim(); ++i) shape.push_back(shape_[i]);
  return reshape(shape);
}

}  // namespace ruccl
