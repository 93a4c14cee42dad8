#pragma once
// Tensor: an n-dimensional strided view (shape, strides, offset, dtype) into a reference-counted
// Storage on a Device. Copying a Tensor is cheap and shares the storage; clone() copies the data.
// Frontend methods validate and dispatch to the Backend of the tensor's device; no math here.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensor/core/checked_arithmetic.h"
#include "tensor/core/device.h"
#include "tensor/core/dtype.h"
#include "tensor/core/error.h"
#include "tensor/core/scalar.h"
#include "tensor/core/shape.h"
#include "tensor/core/storage.h"

namespace ruccl {

class Generator;
namespace indexing {
class TensorIndex;
}

/// An n-dimensional array. `Tensor()` is undefined (holds nothing); everything else has storage.
///
///   Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
///   Tensor y = matmul(x, x.transpose(0, 1)) + 1.0;
class Tensor {
 public:
  Tensor() = default;

  // ---- creation -------------------------------------------------------------------------------
  /// Uninitialised memory of `shape`. A negative size, or an element count, stride or byte count
  /// that overflows int64, is a ShapeError; memory the device cannot provide is an
  /// OutOfMemoryError. Both name `op`: frontend ops that allocate their output pass their own name.
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu(),
                      const char* op = "Tensor::empty");
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, Scalar value, DType dtype = DType::F32,
                     Device device = Device::cpu());
  /// [start, start + step, ...) up to `end` (exclusive), like torch.arange: without a dtype, I64
  /// when start, end and step are all integers, else F32. Values are start + i * step computed in
  /// double (exactly in int64 for integral dtypes, whose arguments are truncated to integers
  /// first). A zero step, or one pointing away from `end`, is a ValueError.
  static Tensor arange(Scalar start, Scalar end, Scalar step = 1,
                       std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
  /// Copies `values` (row-major) into a new tensor of `shape`; numel must match.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device device = Device::cpu());
  /// A 1-d tensor of `values`.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Device device = Device::cpu()) {
    return from_vector<T>(values, Shape{static_cast<std::int64_t>(values.size())}, device);
  }
  /// Standard normal samples drawn from `gen` (see Generator for the algorithm).
  static Tensor randn(const Shape& shape, Generator& gen, DType dtype = DType::F32,
                      Device device = Device::cpu());
  /// Uniform samples in [0, 1) drawn from `gen`.
  static Tensor rand(const Shape& shape, Generator& gen, DType dtype = DType::F32,
                     Device device = Device::cpu());
  /// A random permutation of 0..n-1 (I64), for shuffling data.
  static Tensor randperm(std::int64_t n, Generator& gen, Device device = Device::cpu());
  /// A 0-d tensor holding `value`.
  static Tensor scalar(Scalar value, DType dtype = DType::F32, Device device = Device::cpu());

  // ---- metadata -------------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  std::int64_t numel() const { return numel_; }
  /// Number of dimensions.
  std::int64_t dim() const { return shape_.size(); }
  /// Size of dimension `d` (negative counts from the end).
  std::int64_t size(std::int64_t d) const;
  std::size_t element_size() const { return dtype_size(dtype_); }
  /// numel() * element_size(). Fits for every tensor with its own memory; a broadcast view
  /// (stride 0) may address more bytes than exist, and then this throws ShapeError.
  std::size_t nbytes() const {
    std::int64_t bytes = 0;
    RUCCL_CHECK(!byte_size_overflows(numel_, element_size(), bytes), ShapeError,
                "Tensor::nbytes: expected a byte count that fits int64, got ", numel_,
                " elements of ", dtype_, " (", element_size(), " bytes each) for shape ", shape_);
    return static_cast<std::size_t>(bytes);
  }
  /// Row-major with no gaps.
  bool is_contiguous() const;
  /// The storage shared by every view of this tensor.
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /// Address of element 0 (storage base + offset). For backends and transports.
  void* data_ptr() const;
  /// Typed address of element 0; T must match dtype() exactly.
  template <typename T>
  T* data() const {
    RUCCL_CHECK(dtype_of<T>() == dtype_, DTypeError, "Tensor::data: expected dtype ", dtype_of<T>(),
                " (the requested element type), got ", dtype_);
    return static_cast<T*>(data_ptr());
  }
  /// The values as PyTorch prints them ("tensor([1., 2.])"; rules: tensor/core/tensor_print.cpp).
  std::string to_string() const;

  // ---- reading values -------------------------------------------------------------------------
  /// All elements in row-major order as T (Half, BFloat16, float, double, int32_t, int64_t or
  /// bool), converted from any dtype as torch's item<T>() converts: floating to integer truncates
  /// toward zero, anything to bool is "!= 0", integers to floating round to nearest. A value T
  /// cannot hold (NaN or an infinity to an integer, a finite value beyond T's range: 3e9 to
  /// int32_t, 1e300 to float, 70000 to Half) is a ValueError naming to_vector, the value and its
  /// element; NaN and infinities convert between floating types.
  template <typename T>
  std::vector<T> to_vector() const;
  /// The single element of a one-element tensor, as T (converted as to_vector; errors name item).
  template <typename T>
  T item() const;

  // ---- conversion and copies ------------------------------------------------------------------
  /// This tensor on `device` (itself when already there).
  Tensor to(Device device) const;
  /// This tensor converted to `dtype` (itself when already that dtype).
  Tensor to(DType dtype) const;
  /// A contiguous copy with its own storage.
  Tensor clone() const;
  /// Itself when contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// Writes `src` (broadcast to this shape, converted to this dtype) into this tensor's memory.
  /// Const, as libtorch's: a Tensor is a handle, and writing its elements changes no handle, so
  /// `param.value().copy_(init)` works on the const Tensor& a Param gives.
  void copy_(const Tensor& src) const;
  /// Sets every element to `value` (const as copy_: `param.value().fill_(0.0)`).
  void fill_(Scalar value) const;

  // ---- in-place arithmetic with a scalar (libtorch's add_, sub_, mul_, div_) ------------------
  /// this = this + s (sub_: - s, mul_: * s, div_: / s) elementwise in this tensor's own memory, on
  /// its device's backend, and returns *this. The math is add(t, s)'s (the scalar read as this
  /// dtype, Half and BFloat16 computed in float, integers wrap) but the dtype never changes, so
  /// these refuse what would change it, as torch does: DTypeError for Bool, for a non-integral
  /// scalar with an integer tensor (mul_(0.5) of an I64 tensor; use mul(t, 0.5)) and for div_ of
  /// an integer tensor. A view writes through to the storage it views (x.narrow(0, 1, 2).mul_(2)
  /// changes x); any strides work, but a tensor whose elements share memory (a stride-0 dim of
  /// size > 1: an expand()ed view) is a ValueError, as is an undefined tensor.
  ///
  ///   grads.div_(total_weight);   // in place, no new tensor
  Tensor& add_(Scalar s);
  Tensor& sub_(Scalar s);
  Tensor& mul_(Scalar s);
  Tensor& div_(Scalar s);

  // ---- views (share storage) ------------------------------------------------------------------
  /// Same elements, new shape; one size may be -1. A view when the strides allow, else a copy.
  Tensor reshape(const Shape& shape) const;
  /// A view with a new shape; throws ShapeError when the strides do not allow it.
  Tensor view(const Shape& shape) const;
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor permute(const std::vector<std::int64_t>& dims) const;
  /// Elements [start, start + length) of dimension `d`.
  Tensor narrow(std::int64_t d, std::int64_t start, std::int64_t length) const;
  /// Broadcasts size-1 dims (and new leading dims) to `shape` with stride 0; -1 keeps a size.
  Tensor expand(const Shape& shape) const;
  Tensor squeeze(std::int64_t d) const;
  Tensor unsqueeze(std::int64_t d) const;
  /// Dims [start, end] merged into one.
  Tensor flatten(std::int64_t start = 0, std::int64_t end = -1) const;
  /// Element `i` of dimension 0, dropping that dimension.
  Tensor select(std::int64_t d, std::int64_t i) const;

  // ---- op methods ---------------------------------------------------------------------------
  // The free functions of tensor/ops/*.h as methods (at::Tensor's spelling): x.sum(1) is
  // sum(x, 1), x.matmul(w) is matmul(x, w); same semantics, errors and cost (defined in
  // tensor/ops/tensor_methods.cpp, so this header includes no op header).
  Tensor sum() const;
  Tensor sum(std::int64_t dim, bool keepdim = false) const;
  Tensor sum(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(std::int64_t dim, bool keepdim = false) const;
  Tensor mean(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(std::int64_t dim, bool keepdim = false) const;
  /// The values only (ruccl::max(x, dim)); the indices are argmax(dim). torch's max(dim) returns
  /// both as a tuple.
  Tensor max() const;
  Tensor max(std::int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(std::int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor argmin() const;
  Tensor argmin(std::int64_t dim, bool keepdim = false) const;
  Tensor var(const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
             bool keepdim = false) const;
  Tensor var(std::int64_t dim, std::int64_t correction = 1, bool keepdim = false) const;
  Tensor softmax(std::int64_t dim) const;
  Tensor log_softmax(std::int64_t dim) const;

  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu() const;
  Tensor add(const Tensor& other) const;
  Tensor add(Scalar other) const;
  Tensor sub(const Tensor& other) const;
  Tensor sub(Scalar other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(Scalar other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(Scalar other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(Scalar exponent) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(Scalar other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(Scalar other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(Scalar other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(Scalar other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(Scalar other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(Scalar other) const;

  Tensor matmul(const Tensor& other) const;
  /// transpose(0, 1) of a 2-d tensor; a 0-d or 1-d tensor as it is (torch's t()). More dims are a
  /// ShapeError.
  Tensor t() const;
  Tensor index_select(std::int64_t dim, const Tensor& index) const;
  Tensor gather(std::int64_t dim, const Tensor& index) const;
  std::vector<Tensor> split(std::int64_t split_size, std::int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<std::int64_t>& sizes, std::int64_t dim = 0) const;
  std::vector<Tensor> chunk(std::int64_t chunks, std::int64_t dim = 0) const;

  // ---- indexing (torch::indexing's spelling; the types follow this class) ----------------------
  /// x[0:2, 3] as x.index({Slice(0, 2), 3}); with `using namespace ruccl::indexing`:
  ///   x.index({Slice(), -1})            x[:, -1]        an integer drops its dim
  ///   x.index({Slice(1, None, 2)})      x[1::2]         a step > 0 (a strided view)
  ///   x.index({Ellipsis, 0})            x[..., 0]
  ///   x.index({None, Slice()})          x[None, :]      a new dim of size 1
  ///   x.index({Slice(), idx})           x[:, idx]       one 1-d I64/I32 tensor (index_select)
  ///                                                     or Bool mask of the dim's size
  /// Integers, slices, None and Ellipsis give a view; a tensor index copies. Integers (and
  /// tensor entries) may be negative (counted from the end); out of range is an IndexError
  /// naming the dim, the index and the size. Slices clamp to the dim as Python's do.
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(std::span<const indexing::TensorIndex> indices) const;
  /// x[indices] = value: writes `value` (broadcast to the indexed shape, converted to this dtype)
  /// into the elements index() would read (for a tensor index, entries repeated: the last write
  /// wins). A value sharing this tensor's storage is read before anything is written. Returns
  /// *this.
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value);
  Tensor& index_put_(std::span<const indexing::TensorIndex> indices, const Tensor& value);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, Scalar value);
  Tensor& index_put_(std::span<const indexing::TensorIndex> indices, Scalar value);

  /// A view with explicit geometry over the same storage: sizes and strides >= 0 (negative strides
  /// are not supported), 0 <= offset <= the storage's element count, and every element inside the
  /// storage, all in overflow-checked int64 (ShapeError for a bad size or stride, IndexError for a
  /// view that reaches outside).
  Tensor as_strided(const Shape& shape, const Shape& strides, std::int64_t offset) const;

  /// Wraps existing storage (for backends and deserialisation), checked as as_strided().
  Tensor(std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides,
         std::int64_t offset, DType dtype);

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  std::int64_t offset_ = 0;
  std::int64_t numel_ = 0;
  DType dtype_ = DType::F32;

  // The public constructor, with errors naming `op`.
  Tensor(const char* op, std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides,
         std::int64_t offset, DType dtype);
  // Geometry already known valid (a fresh contiguous block from empty()): no check.
  struct Unchecked {};
  Tensor(Unchecked, std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides,
         std::int64_t numel, DType dtype)
      : storage_(std::move(storage)),
        shape_(shape),
        strides_(strides),
        numel_(numel),
        dtype_(dtype) {}
  void copy_to_host(void* dst) const;
  // The elements (row-major) written to `dst` as `target`'s C++ type (Bool as one byte each),
  // converted and range-checked (tensor/core/tensor_read.cpp); errors name `op`.
  void copy_to_host_as(DType target, void* dst, const char* op) const;
  template <typename T>
  std::vector<T> read_values(const char* op) const;
  static Tensor from_host(const void* src, const Shape& shape, DType dtype, Device device);
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

/// The index types of Tensor::index and Var::index, named as torch::indexing's:
/// `using namespace ruccl::indexing;` then `x.index({Slice(1, None), Ellipsis, 0})`.
namespace indexing {

/// Python's start:stop:step. An absent start or stop means the end of the dim, an absent step 1;
/// a negative start or stop counts from the end; both are clamped to [0, size] (x[2:100] of a
/// size-4 dim is x[2:4]). The step must be > 0 (as in torch).
class Slice {
 public:
  Slice(std::optional<std::int64_t> start = std::nullopt,
        std::optional<std::int64_t> stop = std::nullopt,
        std::optional<std::int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  const std::optional<std::int64_t>& start() const { return start_; }
  const std::optional<std::int64_t>& stop() const { return stop_; }
  const std::optional<std::int64_t>& step() const { return step_; }

 private:
  std::optional<std::int64_t> start_, stop_, step_;
};

/// An absent slice bound (`Slice(1, None)`), and as an index a new dim of size 1 (x[None]).
inline constexpr std::nullopt_t None = std::nullopt;

/// The type of Ellipsis.
struct EllipsisIndexType {
  explicit constexpr EllipsisIndexType() = default;
};
/// As many full dims as the other indices leave (x[..., 0]); at most one per index list.
inline constexpr EllipsisIndexType Ellipsis{};

/// One entry of an index list: an integer, a Slice, None, Ellipsis (or "..."), or a tensor.
class TensorIndex {
 public:
  enum class Kind : std::uint8_t { Integer, Slice, None, Ellipsis, Tensor };

  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}                               // NOLINT
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}                        // NOLINT
  TensorIndex(Slice slice) : kind_(Kind::Slice), slice_(slice) {}                  // NOLINT
  TensorIndex(Tensor tensor) : kind_(Kind::Tensor), tensor_(std::move(tensor)) {}  // NOLINT
  /// "..." as in libtorch; any other string is a ValueError.
  TensorIndex(const char* ellipsis);  // NOLINT
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T i) : kind_(Kind::Integer), integer_(static_cast<std::int64_t>(i)) {  // NOLINT
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      RUCCL_CHECK(i <= static_cast<T>(INT64_MAX), IndexError,
                  "TensorIndex: expected an index below 2^63, got ", i);
    }
  }
  /// torch's True/False indices are not supported: a bool is refused at compile time.
  TensorIndex(bool) = delete;

  Kind kind() const { return kind_; }
  std::int64_t integer() const { return integer_; }
  const indexing::Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  indexing::Slice slice_;
  Tensor tensor_;
};

}  // namespace indexing

// ---- template definitions -----------------------------------------------------------------------

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  const std::int64_t numel = shape.numel("Tensor::from_vector");
  RUCCL_CHECK(values.size() == static_cast<std::size_t>(numel), ShapeError,
              "Tensor::from_vector: expected ", numel, " values for shape ", shape, ", got ",
              values.size());
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed: unpack it
    std::vector<std::uint8_t> bytes(values.begin(), values.end());
    return from_host(bytes.data(), shape, DType::Bool, device);
  } else {
    return from_host(values.data(), shape, dtype_of<T>(), device);
  }
}

template <typename T>
std::vector<T> Tensor::read_values(const char* op) const {
  RUCCL_CHECK(defined(), ValueError, op, ": expected a defined tensor, got an undefined one");
  // The contiguous copy first: a broadcast view too large for memory fails there with a ruccl
  // error, before the host vector is sized.
  const Tensor c = contiguous();
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed: bytes first
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(numel_));
    if (dtype_ == DType::Bool) {
      c.copy_to_host(bytes.data());
    } else {
      c.copy_to_host_as(DType::Bool, bytes.data(), op);
    }
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<std::size_t>(numel_));
    if (dtype_of<T>() == dtype_) {
      c.copy_to_host(out.data());
    } else {
      c.copy_to_host_as(dtype_of<T>(), out.data(), op);
    }
    return out;
  }
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  return read_values<T>("Tensor::to_vector");
}

template <typename T>
T Tensor::item() const {
  RUCCL_CHECK(defined(), ValueError,
              "Tensor::item: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(numel_ == 1, ShapeError,
              "Tensor::item: expected a tensor with exactly 1 element, got shape ", shape_,
              " with ", numel_, " elements");
  return read_values<T>("Tensor::item")[0];
}

}  // namespace ruccl
