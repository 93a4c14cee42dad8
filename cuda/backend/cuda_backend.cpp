// CudaBackend: registration, supports(), memory (allocation, host transfers, copy, fill) and the
// elementwise ops. Reductions and softmax: cuda_backend_reduce.cpp; index ops: cuda_backend_index
// .cpp; matmul: cuda/blas/matmul.cpp.
#include "cuda/backend/cuda_backend.h"

#include <cuda_runtime.h>

#include "cuda/backend/index_errors.h"
#include "cuda/backend/tensor_refs.h"
#include "cuda/collective/device_engine.h"
#include "cuda/core/check.h"
#include "cuda/kernels/dtype_kinds.h"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

void check_supported(const Backend& backend, Op op, DType dtype) {
  RUCCL_CHECK(backend.supports(op, dtype), NotImplementedError, "not implemented: ", backend.name(),
              "::", op_name(op), " for dtype ", dtype);
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  RUCCL_CHECK(a.device() == b.device(), DeviceError, op,
              ": expected every tensor on one device, got ", a.device(), " and ", b.device());
}

bool CudaBackend::supports(Op op, DType dtype) const {
  if (op == Op::OneHot) return dtype == DType::I32 || dtype == DType::I64;  // the indices' dtype
  if (op == Op::Cumsum || op == Op::Sort) return false;  // no scan or sort kernels yet
  if (op == Op::BatchNorm) return false;  // batch_norm falls back to its composite (docs/cuda.md)
  return op_supports(op, dtype);
}

std::shared_ptr<Storage> CudaBackend::allocate(std::size_t nbytes, Device device) {
  return device_storage(nbytes, device);
}

namespace {

bool is_pinned(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

void CudaBackend::copy_from_host(const void* host, Storage& dst, std::size_t offset,
                                 std::size_t nbytes) {
  RUCCL_ASSERT(offset + nbytes <= dst.nbytes());
  if (nbytes == 0) return;
  const Device device = dst.device();
  const ScopedDevice scope(device);
  const cudaStream_t stream = stream_for(device);
  RUCCL_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst.data()) + offset, host, nbytes,
                                   cudaMemcpyHostToDevice, stream));
  // From pageable memory the call returns once `host` has been staged (the caller may reuse it);
  // from pinned memory the DMA reads it later, so wait for it before handing `host` back.
  if (is_pinned(host)) RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaBackend::copy_to_host(const Storage& src, std::size_t offset, void* host,
                               std::size_t nbytes) {
  RUCCL_ASSERT(offset + nbytes <= src.nbytes());
  if (nbytes == 0) return;
  const Device device = src.device();
  const ScopedDevice scope(device);
  const cudaStream_t stream = stream_for(device);
  RUCCL_CUDA_CHECK(cudaMemcpyAsync(host, static_cast<const char*>(src.data()) + offset, nbytes,
                                   cudaMemcpyDeviceToHost, stream));
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream));  // the caller reads `host` next
  raise_index_error(device);  // a bad index of an earlier index op surfaces here
}

void CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  RUCCL_ASSERT(src.shape() == dst.shape() && src.device().is_cuda() && dst.device().is_cuda());
  if (dst.numel() == 0) return;
  const bool same_layout = src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous();
  if (src.device() != dst.device()) {
    // Between two GPUs: one peer copy of contiguous bytes, ordered with both devices' streams
    // (copy_between_devices). Another layout or dtype: made contiguous on src's device, copied,
    // then converted on dst's device.
    if (same_layout) {
      return copy_between_devices(src.device(), src.data_ptr(), dst.device(), dst.data_ptr(),
                                  dst.nbytes());
    }
    Tensor staged = Tensor::empty(src.shape(), src.dtype(), dst.device(), "CudaBackend::copy");
    copy(src.contiguous(), staged);
    return copy(staged, dst);
  }
  const ScopedDevice scope(dst.device());
  const cudaStream_t stream = stream_for(dst.device());
  if (same_layout) {
    RUCCL_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                                     cudaMemcpyDeviceToDevice, stream));
    return;
  }
  launch_copy(ref(src), ref(dst), stream);
}

void CudaBackend::fill(const Tensor& dst, Scalar value) {
  if (dst.numel() == 0) return;
  const ScopedDevice scope(dst.device());
  launch_fill(ref(dst), scalar_arg(value), stream_for(dst.device()));
}

void CudaBackend::unary(Op op, const Tensor& x, const Tensor& out) {
  check_supported(*this, op, x.dtype());
  const bool bool_out = op == Op::IsNan || op == Op::IsFinite;
  RUCCL_ASSERT(x.shape() == out.shape() &&
                   (bool_out ? out.dtype() == DType::Bool : x.dtype() == out.dtype()),
               "cuda::", op_name(op));
  check_same_device(op_name(op).data(), x, out);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  launch_unary(op, ref(x), ref(out), stream_for(out.device()));
}

void CudaBackend::unary_params(Op op, const Tensor& x, double p0, double p1, const Tensor& out) {
  check_supported(*this, op, x.dtype());
  RUCCL_ASSERT(x.shape() == out.shape() && x.dtype() == out.dtype(), "cuda::", op_name(op));
  check_same_device(op_name(op).data(), x, out);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  launch_unary_params(op, ref(x), p0, p1, ref(out), stream_for(out.device()));
}

void CudaBackend::cumsum(const Tensor&, std::int64_t, bool, const Tensor&) {
  check_supported(*this, Op::Cumsum, DType::F32);
}

void CudaBackend::sort(const Tensor&, std::int64_t, bool, const Tensor&, const Tensor&) {
  check_supported(*this, Op::Sort, DType::F32);
}

void CudaBackend::batch_norm_stats(const Tensor&, const Tensor&, const Tensor&) {
  check_supported(*this, Op::BatchNorm, DType::F32);
}

void CudaBackend::batch_norm_elemt(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  check_supported(*this, Op::BatchNorm, DType::F32);
}

void CudaBackend::batch_norm_backward_reduce(const Tensor&, const Tensor&, const Tensor&,
                                             const Tensor&, const Tensor&) {
  check_supported(*this, Op::BatchNorm, DType::F32);
}

void CudaBackend::batch_norm_backward_elemt(const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&) {
  check_supported(*this, Op::BatchNorm, DType::F32);
}

namespace {

bool is_compare(Op op) {
  switch (op) {
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::LogicalAnd:
    case Op::LogicalOr:
      return true;
    default:
      return false;
  }
}

}  // namespace

void CudaBackend::binary(Op op, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_supported(*this, op, a.dtype());
  RUCCL_ASSERT(a.dtype() == b.dtype() && a.shape() == out.shape() && b.shape() == out.shape(),
               "cuda::", op_name(op));
  check_same_device(op_name(op).data(), a, b);
  check_same_device(op_name(op).data(), a, out);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  if (is_compare(op)) {
    RUCCL_ASSERT(out.dtype() == DType::Bool);
    launch_compare(op, ref(a), ref(b), ref(out), stream);
  } else {
    RUCCL_ASSERT(out.dtype() == a.dtype());
    launch_binary(op, ref(a), ref(b), ref(out), stream);
  }
}

void CudaBackend::binary_scalar(Op op, const Tensor& a, Scalar b, ScalarSide side,
                                const Tensor& out) {
  check_supported(*this, op, a.dtype());
  RUCCL_ASSERT(a.shape() == out.shape(), "cuda::", op_name(op));
  check_same_device(op_name(op).data(), a, out);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const bool left = side == ScalarSide::Left;
  if (is_compare(op)) {
    RUCCL_ASSERT(out.dtype() == DType::Bool);
    launch_compare_scalar(op, ref(a), scalar_arg(b), left, ref(out), stream);
  } else {
    RUCCL_ASSERT(out.dtype() == a.dtype());
    launch_binary_scalar(op, ref(a), scalar_arg(b), left, ref(out), stream);
  }
}

void CudaBackend::scalar_in_place(Op op, const Tensor& t, Scalar s) {
  check_supported(*this, op, t.dtype());
  RUCCL_ASSERT(t.device().is_cuda(), "cuda::", op_name(op));
  if (t.numel() == 0) return;
  const ScopedDevice scope(t.device());
  launch_scalar_in_place(op, ref(t), scalar_arg(s), stream_for(t.device()));
}

void CudaBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  RUCCL_ASSERT(cond.dtype() == DType::Bool && a.dtype() == out.dtype() &&
               b.dtype() == out.dtype() && cond.shape() == out.shape() &&
               a.shape() == out.shape() && b.shape() == out.shape());
  check_same_device("where", cond, out);
  check_same_device("where", a, out);
  check_same_device("where", b, out);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  launch_where(ref(cond), ref(a), ref(b), ref(out), stream_for(out.device()));
}

// ---- registration --------------------------------------------------------------------------

CudaBackend& backend() {
  static CudaBackend instance;
  return instance;
}

void install() {
  register_backend(DeviceType::CUDA, &backend());
  install_collectives();  // the device collectives and RUCCL_ENGINE=nccl (cuda/collective/)
}

}  // namespace ruccl::cuda

// The anchor the umbrella target ruccl::ruccl asks the linker for (LINKER:--undefined): it lives
// in this object file, so a static link keeps the file and with it the registrar below.
extern "C" {
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
int ruccl_cuda_backend_anchor = 0;
}

namespace {
// Registers the backend when the library is loaded. Only bookkeeping: no CUDA call, so a machine
// without a GPU starts normally (the first call that needs a device says there is none).
const bool g_registered = [] {
  ruccl::cuda::install();
  return true;
}();
}  // namespace
