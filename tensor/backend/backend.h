#pragma once
// The Backend seam: a small abstract interface, chosen at run time from a tensor's Device, that
// does the math. The frontend (tensor/ops/*.cpp) validates arguments, computes output shapes,
// allocates outputs through the backend and dispatches; it never touches elements itself.
//
// Conventions for every method: `out` is already allocated with the right shape and dtype on this
// backend's device; inputs may have any strides (including 0 for broadcast views) unless a method
// says otherwise; all tensors passed to one call are on the same device.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "tensor/core/device.h"
#include "tensor/core/dtype.h"
#include "tensor/core/scalar.h"
#include "tensor/core/storage.h"

namespace ruccl {

class Tensor;

/// Every op a backend may be asked for; `supports(op, dtype)` answers per dtype.
enum class Op : std::uint16_t {
  // memory
  Copy,  // dst = src with dtype conversion, any strides
  Fill,  // dst = value
  // unary elementwise (out has x's shape and dtype, except Abs/Neg of integers keep dtype)
  Neg,
  Exp,
  Log,
  Sqrt,
  Abs,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  Sign,
  // binary elementwise (a, b are broadcast views with out's shape)
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Maximum,
  Minimum,
  // comparisons (out is Bool)
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // logical on Bool
  LogicalAnd,
  LogicalOr,
  LogicalNot,
  Where,  // out = cond ? a : b
  // reductions over a set of dims (out keeps reduced dims with size 1)
  Sum,
  Mean,
  Prod,
  Max,
  Min,
  Argmax,
  Argmin,
  // linear algebra
  Matmul,
  // normalisation along one dim
  Softmax,
  LogSoftmax,
  // indexing
  IndexSelect,
  Gather,
  ScatterAdd,
  IndexAdd,
  OneHot,
  kCount
};

/// "add", "matmul", ...
std::string_view op_name(Op op);

/// The math of one kind of device. Implementations: CpuBackend (Eigen), StubBackend (throws
/// "not implemented: <backend>::<op>", the template for a new one), CudaBackend (cuda/).
class Backend {
 public:
  virtual ~Backend() = default;

  /// "cpu", "cuda", "stub".
  virtual std::string_view name() const = 0;
  /// Whether `op` is implemented for `dtype` (the dtype of the op's main input).
  virtual bool supports(Op op, DType dtype) const = 0;

  /// `nbytes` of memory on `device`, aligned for any element type.
  virtual std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device) = 0;
  /// Host <-> device transfers of `nbytes` into/out of a storage at byte offset `offset`.
  virtual void copy_from_host(const void* host, Storage& dst, std::size_t offset,
                              std::size_t nbytes) = 0;
  virtual void copy_to_host(const Storage& src, std::size_t offset, void* host,
                            std::size_t nbytes) = 0;

  /// dst = src (same shape), converting dtype; any strides on both sides.
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void fill(const Tensor& dst, Scalar value) = 0;

  virtual void unary(Op op, const Tensor& x, const Tensor& out) = 0;
  virtual void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  /// Reduces `x` over `dims` (sorted, unique, non-negative) into `out`, whose shape is x's with
  /// those dims set to 1. Argmax/Argmin take exactly one dim and write I64 (first index on ties).
  virtual void reduce(Op op, const Tensor& x, std::span<const std::int64_t> dims,
                      const Tensor& out) = 0;
  /// out[b] = a[b] @ b[b] for 3-d a [B, M, K], b [B, K, N], out [B, M, N] (a, b may be stride-0
  /// over the batch for broadcasting).
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  /// Softmax or LogSoftmax along `dim`, numerically stable (max subtracted).
  virtual void softmax(Op op, const Tensor& x, std::int64_t dim, const Tensor& out) = 0;
  /// out = x.index_select(dim, index) (index: 1-d I64/I32, validated by the frontend).
  virtual void index_select(const Tensor& x, std::int64_t dim, const Tensor& index,
                            const Tensor& out) = 0;
  /// out[..i..] = x[..index[..i..]..] along dim (index has out's shape).
  virtual void gather(const Tensor& x, std::int64_t dim, const Tensor& index,
                      const Tensor& out) = 0;
  /// out[..index[..i..]..] += src[..i..] along dim (adds in index order; deterministic).
  virtual void scatter_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                           const Tensor& src) = 0;
  /// out.narrow(dim, index[j], 1) += src.narrow(dim, j, 1) for each j in order.
  virtual void index_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                         const Tensor& src) = 0;
  /// out[..., c] = (indices[...] == c); out is zero-filled by the backend.
  virtual void one_hot(const Tensor& indices, const Tensor& out) = 0;
};

/// The backend that owns memory of `device`'s type. Throws DeviceError when none is available
/// (a CUDA device in a build without CUDA, or with no GPU present).
Backend& backend_for(Device device);
/// Installs the backend for a device type (the CUDA layer registers itself at start-up).
void register_backend(DeviceType type, Backend* backend);
/// Whether a backend for `type` is installed (the CPU one always is).
bool has_backend(DeviceType type);

}  // namespace ruccl
