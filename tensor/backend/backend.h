#pragma once
// The Backend seam: a small abstract interface, chosen at run time from a tensor's Device, that
// does the math. The frontend (tensor/ops/*.cpp) validates arguments, computes output shapes,
// allocates outputs through the backend and dispatches; it never touches elements itself.
//
// Conventions for every method: `out` is already allocated with the right shape and dtype on this
// backend's device; inputs may have any strides (including 0 for broadcast views) unless a method
// says otherwise; all tensors passed to one call are on the same device.
//
// Execution model: every call is ordered on the current stream of its device (this thread's,
// set_current_stream) and may return before the work is done; work on one stream runs in the
// order it was asked. The host sees results after synchronize(device), an Event's synchronize(),
// or a copy_to_host (which returns with the bytes in host memory). Another stream waits for work
// through an Event (record_event, then block). The CPU backend has one stream per device, handle
// 0, and runs everything before returning.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "tensor/backend/optimizer_step.h"
#include "tensor/backend/window2d.h"
#include "tensor/core/device.h"
#include "tensor/core/dtype.h"
#include "tensor/core/scalar.h"
#include "tensor/core/storage.h"

namespace ruccl {

class Tensor;

/// A stream of one device: work asked of it runs in order. `handle` belongs to the backend (a
/// cudaStream_t on CUDA, 0 being the device's default stream); the CPU's only stream is 0.
struct Stream {
  Device device;
  std::uintptr_t handle = 0;
  friend bool operator==(const Stream&, const Stream&) = default;
};

/// A point recorded in a stream's work (Backend::record_event): the host or another stream waits
/// for everything asked of that stream before it.
class Event {
 public:
  virtual ~Event() = default;
  /// Blocks the host until the recorded work is done.
  virtual void synchronize() = 0;
  /// Whether the recorded work is done; never blocks.
  virtual bool ready() const = 0;
  /// Makes work asked of `stream` from now on wait for the recorded work (the host does not wait).
  virtual void block(const Stream& stream) = 0;
};

/// Which side of a binary op a scalar operand sits on: Right is op(tensor, scalar), Left is
/// op(scalar, tensor) (they differ for sub, div, pow and the comparisons).
enum class ScalarSide : std::uint8_t { Right, Left };

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
  // optimizer updates (in place on the parameter and its state)
  SgdUpdate,
  AdamUpdate,
  // in-place arithmetic with a scalar (Tensor::add_ sub_ mul_ div_): t = op(t, s) in t's memory
  AddInPlace,
  SubInPlace,
  MulInPlace,
  DivInPlace,
  // convolution and pooling windows (tensor/backend/window2d.h); F32 and F64
  Im2col,
  Col2im,
  // element-wise math, scans, sorting
  // unary elementwise on floating dtypes (out has x's shape and dtype)
  Sin,
  Cos,
  Silu,
  Rsqrt,
  Erf,
  Log1p,
  Expm1,
  // unary tests (any numeric dtype in, Bool out)
  IsNan,
  IsFinite,
  // unary with parameters (unary_params): floating
  LeakyRelu,  // p0 = negative slope
  Elu,        // p0 = alpha
  Softplus,   // p0 = beta, p1 = threshold
  // along one dim
  Cumsum,  // cumsum(x, dim, reverse, out)
  Sort,    // sort(x, dim, descending, values, indices)
  // batch normalisation's per-channel passes (batch_norm_stats, _elemt, _backward_reduce,
  // _backward_elemt); F32 and F64
  BatchNorm,
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

  /// `nbytes` of memory on `device`, aligned for any element type, usable on the current stream.
  virtual std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device) = 0;

  /// The stream this thread's calls on `device` are ordered on.
  virtual Stream current_stream(Device device) = 0;
  /// Orders this thread's later calls on `stream.device` on `stream`.
  virtual void set_current_stream(const Stream& stream) = 0;
  /// A stream of `device` that runs independently of the others (the backend owns it).
  virtual Stream create_stream(Device device) = 0;
  /// Blocks the host until all work asked of `device`, on every stream, is done.
  virtual void synchronize(Device device) = 0;
  /// Records the work asked of `stream` so far.
  virtual std::unique_ptr<Event> record_event(const Stream& stream) = 0;
  /// Host <-> device transfers of `nbytes` into/out of a storage at byte offset `offset`.
  virtual void copy_from_host(const void* host, Storage& dst, std::size_t offset,
                              std::size_t nbytes) = 0;
  virtual void copy_to_host(const Storage& src, std::size_t offset, void* host,
                            std::size_t nbytes) = 0;

  /// `nbytes` from `src` at `src_offset` to `dst` at `dst_offset`; both storages of this backend's
  /// device type, on one device or on two (a peer copy), ordered on dst's device's current stream.
  virtual void copy_bytes(const Storage& src, std::size_t src_offset, Storage& dst,
                          std::size_t dst_offset, std::size_t nbytes) = 0;

  /// dst = src (same shape), converting dtype; any strides on both sides.
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void fill(const Tensor& dst, Scalar value) = 0;

  virtual void unary(Op op, const Tensor& x, const Tensor& out) = 0;
  virtual void binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  /// out = op(a, b) (side Right) or op(b, a) (side Left) with `b` read as a's dtype; out has a's
  /// shape (Bool for comparisons). No device memory holds `b`: it travels with the call.
  virtual void binary_scalar(Op op, const Tensor& a, Scalar b, ScalarSide side,
                             const Tensor& out) = 0;
  /// out = op(x; p0, p1) for the unary ops with parameters, one pass, floating dtypes: LeakyRelu
  /// (x > 0 ? x : p0 x), Elu (x > 0 ? x : p0 (e^x - 1)), Softplus (p0 x > p1 ? x :
  /// log(1 + e^(p0 x)) / p0, torch's beta and threshold). The parameters travel with the call.
  virtual void unary_params(Op op, const Tensor& x, double p0, double p1, const Tensor& out) = 0;
  /// t = op(t, s) in place for op AddInPlace, SubInPlace, MulInPlace or DivInPlace: the values
  /// binary_scalar gives for Add, Sub, Mul, Div with `s` on the right (read as t's dtype; integers
  /// wrap), written into t's own elements. `t` may have any strides (a view writes through to the
  /// storage it views) but no two of its elements share memory (the frontend refuses a stride-0
  /// dim); `s` travels with the call.
  virtual void scalar_in_place(Op op, const Tensor& t, Scalar s) = 0;
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
  // The index ops check every index against its bound themselves (IndexError through
  // throw_index_out_of_bounds, tensor/backend/index_bounds.h), so no host check syncs a device.
  /// out = x.index_select(dim, index) (index: 1-d I64/I32; its dtype and rank checked by the
  /// frontend).
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
  /// Inclusive prefix sums of `x` along `dim` into `out` (same shape and dtype; F16/BF16
  /// accumulate in F32); with `reverse` the sums run from the end (out[i] = sum of x[j], j >= i:
  /// cumsum's backward).
  virtual void cumsum(const Tensor& x, std::int64_t dim, bool reverse, const Tensor& out) = 0;
  /// The first k = values.shape()[dim] elements of each row of `x` along `dim` in ascending
  /// (descending) order, with their I64 positions in `indices`. Stable: equal values keep their
  /// order of position. NaN sorts above every number (last ascending, first descending), as torch.
  virtual void sort(const Tensor& x, std::int64_t dim, bool descending, const Tensor& values,
                    const Tensor& indices) = 0;

  /// Unfolds the sliding windows of x [N, C, H, W] (contiguous) into cols [C * kh * kw, N * oh *
  /// ow] (contiguous): cols[(c * kh + i) * kw + j, (n * oh + y) * ow + x] = x[n, c, y * sh - ph + i
  /// * dh, x * sw - pw + j * dw], or `pad_value` where that falls outside x. F32 and F64.
  virtual void im2col(const Tensor& x, const Window2d& window, Scalar pad_value,
                      const Tensor& cols) = 0;
  /// The transpose of im2col: x [N, C, H, W] (contiguous, written whole) = the sum, for every
  /// element of x, of the cols entries im2col would have copied from it (padding entries are
  /// dropped). Deterministic: each element sums its entries in the order of the window offsets.
  virtual void col2im(const Tensor& cols, const Window2d& window, const Tensor& x) = 0;

  // Batch normalisation over every dim of x [N, C, ...] but the channel dim 1 (PyTorch's native
  // batch_norm_stats, batch_norm_elemt, batch_norm_backward_reduce and batch_norm_backward_elemt):
  // x, dy and dx contiguous; every per-channel tensor [C] contiguous; one floating dtype (F32 or
  // F64) throughout. Sums accumulate in double; each channel's sums run in a fixed order, so
  // results never depend on the thread count.
  /// mean[c] and var[c], the population variance (Σ (x - mean)^2 / count), of channel c.
  virtual void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) = 0;
  /// out = x * scale[c] + shift[c] (out may be x).
  virtual void batch_norm_elemt(const Tensor& x, const Tensor& scale, const Tensor& shift,
                                const Tensor& out) = 0;
  /// sum_dy[c] = Σ dy and sum_dy_xmu[c] = Σ dy * (x - mean[c]) over channel c.
  virtual void batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                          const Tensor& sum_dy, const Tensor& sum_dy_xmu) = 0;
  /// dx = (dy - mean_dy[c] - (x - mean[c]) * proj[c]) * scale[c].
  virtual void batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                         const Tensor& mean_dy, const Tensor& proj,
                                         const Tensor& scale, const Tensor& dx) = 0;

  /// One SGD step in place on `param` and `momentum_buffer` (tensor/backend/optimizer_step.h);
  /// param, grad and buffer contiguous, of one floating dtype (F32 or F64), equal element counts.
  virtual void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                          const SgdStep& step) = 0;
  /// One Adam or AdamW step in place on `param`, `exp_avg` and `exp_avg_sq` (same requirements).
  virtual void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                           const Tensor& exp_avg_sq, const AdamStep& step) = 0;
};

/// The backend that owns memory of `device`'s type. Throws DeviceError when none is available
/// (a CUDA device in a build without CUDA, or with no GPU present).
Backend& backend_for(Device device);
/// Installs the backend for a device type (the CUDA layer registers itself at start-up).
void register_backend(DeviceType type, Backend* backend);
/// Whether a backend for `type` is installed (the CPU one always is).
bool has_backend(DeviceType type);

}  // namespace ruccl
