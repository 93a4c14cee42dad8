#pragma once
// Shape: the sizes of a tensor's dimensions, stored inline (no heap) for up to kMaxDims dims.
// The same type carries strides (in elements).
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace ruccl {

/// Sizes (or strides) of up to kMaxDims dimensions. Shape{2, 3} is a 2x3 matrix; Shape{} a scalar.
class Shape {
 public:
  static constexpr int kMaxDims = 8;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);
  explicit Shape(const std::vector<std::int64_t>& dims)
      : Shape(std::span<const std::int64_t>(dims)) {}

  /// Number of dimensions.
  std::int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t operator[](std::int64_t i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](std::int64_t i) { return dims_[static_cast<std::size_t>(i)]; }
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + size_; }
  std::int64_t* begin() { return dims_.data(); }
  std::int64_t* end() { return dims_.data() + size_; }
  std::span<const std::int64_t> span() const {
    return {dims_.data(), static_cast<std::size_t>(size_)};
  }
  std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }

  void push_back(std::int64_t d);
  void insert(std::int64_t pos, std::int64_t d);
  void erase(std::int64_t pos);

  /// Product of the sizes (1 for a scalar; 0 when a size is 0, even if the others overflow).
  /// Throws ShapeError naming `op` on a negative size or when the product overflows int64.
  std::int64_t numel(const char* op = "Shape") const;
  /// Row-major strides of a contiguous tensor of this shape (a size-0 dim counts as 1). With a size
  /// 0 in the shape, a stride whose byte distance (stride * element_size) would overflow int64 is
  /// 0, since no element uses it ([0, 3, 2^62] has strides [0, 2^62, 1] for 1-byte elements,
  /// [0, 0, 1] for 4-byte ones); without one, such a stride or an overflowing element count
  /// throws ShapeError naming `op`.
  Shape contiguous_strides(const char* op = "Shape", std::size_t element_size = 1) const;

  /// "[2, 3]"
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<std::int64_t, kMaxDims> dims_{};
  std::int64_t size_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

/// "[1, 0, 2]": the multi-index of row-major element `flat` of `shape` (for messages; a zero-size
/// dim counts as size 1).
std::string unravel_index(std::int64_t flat, const Shape& shape);

/// Turns a possibly negative `dim` of an `ndim`-dimensional tensor into [0, ndim); throws
/// IndexError naming `op` when it is out of range.
std::int64_t normalize_dim(std::int64_t dim, std::int64_t ndim, const char* op);

/// The NumPy/PyTorch broadcast of two shapes; throws ShapeError naming `op` when they do not
/// broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ruccl
