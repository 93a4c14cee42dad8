#include "tensor/core/shape.h"

#include <sstream>

#include "tensor/core/checked_arithmetic.h"
#include "tensor/core/error.h"

namespace ruccl {

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  RUCCL_CHECK(dims.size() <= static_cast<std::size_t>(kMaxDims), ShapeError,
              "Shape: expected at most ", kMaxDims, " dimensions, got ", dims.size());
  for (std::int64_t d : dims) dims_[static_cast<std::size_t>(size_++)] = d;
}

void Shape::push_back(std::int64_t d) {
  RUCCL_CHECK(size_ < kMaxDims, ShapeError, "Shape: expected at most ", kMaxDims,
              " dimensions, got ", size_ + 1);
  dims_[static_cast<std::size_t>(size_++)] = d;
}

void Shape::insert(std::int64_t pos, std::int64_t d) {
  RUCCL_ASSERT(pos >= 0 && pos <= size_);
  push_back(0);
  for (std::int64_t i = size_ - 1; i > pos; --i) dims_[i] = dims_[i - 1];
  dims_[static_cast<std::size_t>(pos)] = d;
}

void Shape::erase(std::int64_t pos) {
  RUCCL_ASSERT(pos >= 0 && pos < size_);
  for (std::int64_t i = pos; i + 1 < size_; ++i) dims_[i] = dims_[i + 1];
  --size_;
}

std::int64_t Shape::numel(const char* op) const {
  std::int64_t n = 1;
  bool overflow = false;
  bool has_zero = false;
  for (std::int64_t d : *this) {
    RUCCL_CHECK(d >= 0, ShapeError, op, ": expected non-negative sizes, got ", to_string());
    has_zero = has_zero || d == 0;
    overflow = mul_overflows(n, d, n) || overflow;
  }
  // An overflow only matters if no dimension is zero (then the product is 0 however it wrapped).
  RUCCL_CHECK(!overflow || has_zero, ShapeError, op, ": element count of ", to_string(),
              " overflows int64");
  return has_zero ? 0 : n;
}

Shape Shape::contiguous_strides(const char* op, std::size_t element_size) const {
  Shape strides = *this;
  std::int64_t s = 1;
  bool overflow = false;
  for (std::int64_t i = size_ - 1; i >= 0; --i) {
    strides[i] = s;
    const std::int64_t d = dims_[static_cast<std::size_t>(i)];
    overflow = mul_overflows(s, d > 0 ? d : 1, s) || overflow;
  }
  std::int64_t bytes = 0;
  // The fast path: the product of all sizes bounds every stride, so if it fits in bytes they do.
  if (!overflow && !byte_size_overflows(s, element_size, bytes)) return strides;
  // Else stride by stride: with a size 0 an overflow only concerns outer strides of a tensor
  // without elements (0 there); without one, the element count or the byte size does not fit.
  bool has_zero = false;
  for (std::int64_t d : *this) has_zero = has_zero || d == 0;
  s = 1;
  overflow = false;
  for (std::int64_t i = size_ - 1; i >= 0; --i) {
    overflow = overflow || byte_size_overflows(s, element_size, bytes);
    strides[i] = overflow ? 0 : s;
    const std::int64_t d = dims_[static_cast<std::size_t>(i)];
    overflow = overflow || mul_overflows(s, d > 0 ? d : 1, s);
  }
  if (overflow && !has_zero) {
    (void)numel(op);
    throw ShapeError(str(op, ": expected a byte size that fits int64, got ", to_string(), " of ",
                         element_size, "-byte elements"));
  }
  return strides;
}

std::string Shape::to_string() const {
  std::ostringstream out;
  out << '[';
  for (std::int64_t i = 0; i < size_; ++i)
    out << (i ? ", " : "") << dims_[static_cast<std::size_t>(i)];
  out << ']';
  return out.str();
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.size_ != b.size_) return false;
  for (std::int64_t i = 0; i < a.size_; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape.to_string(); }

std::int64_t normalize_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t lo = ndim == 0 ? -1 : -ndim;
  const std::int64_t hi = ndim == 0 ? 0 : ndim - 1;
  RUCCL_CHECK(dim >= lo && dim <= hi, IndexError, op, ": expected a dim in [", lo, ", ", hi,
              "] for a ", ndim, "-d tensor, got ", dim);
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::int64_t n = std::max(a.size(), b.size());
  Shape out;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ai = i - (n - a.size());
    const std::int64_t bi = i - (n - b.size());
    const std::int64_t da = ai >= 0 ? a[ai] : 1;
    const std::int64_t db = bi >= 0 ? b[bi] : 1;
    RUCCL_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", a, " and ", b,
                " do not broadcast (dim ", i, ": expected equal sizes or a 1, got ", da, " and ",
                db, ")");
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

std::string unravel_index(std::int64_t flat, const Shape& shape) {
  Shape index = shape;
  for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
    const std::int64_t n = shape[d] > 0 ? shape[d] : 1;
    index[d] = flat % n;
    flat /= n;
  }
  return index.to_string();
}

}  // namespace ruccl
