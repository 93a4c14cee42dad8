// CudaBackend index ops: views and arguments here, kernels (with the device-side bounds checks)
// in cuda/kernels/index.cu. After each kernel the first bad position, if any, is read back and
// raised as IndexError in the CPU frontend's words.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/tensor_refs.h"
#include "cuda/core/check.h"
#include "cuda/kernels/index_kernels.h"
#include "tensor/backend/index_bounds.h"

namespace ruccl::cuda {

namespace {

/// A device word holding the first bad position (UINT64_MAX: none yet).
class BadIndexFlag {
 public:
  BadIndexFlag(Device device, cudaStream_t stream)
      : ws_(sizeof(unsigned long long), device), stream_(stream) {
    RUCCL_CUDA_CHECK(cudaMemsetAsync(ws_.data(), 0xff, sizeof(unsigned long long), stream));
  }
  unsigned long long* data() const { return static_cast<unsigned long long*>(ws_.data()); }
  /// Waits for the kernels queued so far; the first bad position, or -1 when there is none.
  std::int64_t first_bad() const {
    unsigned long long host = 0;
    RUCCL_CUDA_CHECK(
        cudaMemcpyAsync(&host, ws_.data(), sizeof(host), cudaMemcpyDeviceToHost, stream_));
    RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host == std::numeric_limits<unsigned long long>::max() ? -1
                                                                  : static_cast<std::int64_t>(host);
  }

 private:
  Workspace ws_;
  cudaStream_t stream_;
};

/// The value of `index` at row-major position `position` (read from the device).
std::int64_t index_value_at(const Tensor& index, std::int64_t position) {
  std::int64_t offset = index.offset();
  for (std::int64_t d = index.dim() - 1; d >= 0; --d) {
    const std::int64_t size = index.shape()[d];
    offset += (position % size) * index.strides()[d];
    position /= size;
  }
  const std::size_t elem = index.element_size();
  std::int64_t v64 = 0;
  std::int32_t v32 = 0;
  void* host = elem == 8 ? static_cast<void*>(&v64) : static_cast<void*>(&v32);
  backend().copy_to_host(*index.storage(), static_cast<std::size_t>(offset) * elem, host, elem);
  return elem == 8 ? v64 : v32;
}

/// Raises the CPU backend's IndexError (throw_index_out_of_bounds) for the first bad index the
/// device found, if any.
void check_flag(const BadIndexFlag& flag, const Tensor& index, const char* op, std::int64_t bound,
                std::int64_t dim, const Shape& of) {
  const std::int64_t position = flag.first_bad();
  if (position < 0) return;
  const std::int64_t v = index_value_at(index, position);
  throw IndexError(str(op, ": expected every index in [0, ", bound, ") for dim ", dim, " of shape ",
                       of, ", got ", v, " at position ", unravel_index(position, index.shape())));
}

/// Shape with dim's size replaced by 1.
Shape with_dim_one(Shape shape, std::int64_t dim) {
  shape[dim] = 1;
  return shape;
}

Shape strides_pinned(const Tensor& t, std::int64_t dim) {
  Shape s = t.strides();
  s[dim] = 0;
  return s;
}

/// A 1-d index (or a 0-d one) broadcast over `shape` along dim.
TensorRef broadcast_index(const Tensor& index, const Shape& shape, std::int64_t dim) {
  Shape strides = shape;
  for (std::int64_t d = 0; d < strides.size(); ++d) strides[d] = 0;
  strides[dim] = index.dim() == 0 ? 0 : index.strides()[0];
  return ref_as(index, shape, strides);
}

std::int64_t elements_after(const Shape& shape, std::int64_t dim) {
  std::int64_t n = 1;
  for (std::int64_t d = dim + 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

void gather_common(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& out,
                   bool select, const char* op) {
  check_supported(backend(), select ? Op::IndexSelect : Op::Gather, x.dtype());
  check_same_device(op, x, out);
  check_same_device(op, index, out);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const BadIndexFlag flag(out.device(), stream);
  GatherArgs a;
  a.out = ref(out);
  a.x = ref_as(x, out.shape(), strides_pinned(x, dim));
  a.index = select ? broadcast_index(index, out.shape(), dim) : ref(index);
  a.step = x.strides()[dim] * static_cast<std::int64_t>(x.element_size());
  a.bound = x.shape()[dim];
  if (select) {
    a.pos_inner = elements_after(out.shape(), dim);
    a.pos_size = out.shape()[dim];
  }
  a.first_bad = flag.data();
  launch_gather(a, stream);
  check_flag(flag, index, op, x.shape()[dim], dim, x.shape());
}

void scatter_common(const Tensor& out, std::int64_t dim, const Tensor& index, const Tensor& src,
                    bool index_1d, const char* op) {
  check_supported(backend(), index_1d ? Op::IndexAdd : Op::ScatterAdd, out.dtype());
  check_same_device(op, out, src);
  check_same_device(op, out, index);
  const Shape& shape = index_1d ? src.shape() : index.shape();
  if (shape.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const BadIndexFlag flag(out.device(), stream);
  const Shape lines = with_dim_one(shape, dim);
  ScatterArgs a;
  a.out = ref_as(out, lines, strides_pinned(out, dim));
  a.src = ref_as(src, lines, src.strides());
  if (index_1d) {
    Shape zero = lines;
    for (std::int64_t d = 0; d < zero.size(); ++d) zero[d] = 0;
    a.index = ref_as(index, lines, zero);
    a.index_step = (index.dim() == 0 ? 0 : index.strides()[0]) *
                   static_cast<std::int64_t>(index.element_size());
  } else {
    a.index = ref_as(index, lines, index.strides());
    a.index_step = index.strides()[dim] * static_cast<std::int64_t>(index.element_size());
  }
  a.n = shape[dim];
  a.out_step = out.strides()[dim] * static_cast<std::int64_t>(out.element_size());
  a.src_step = src.strides()[dim] * static_cast<std::int64_t>(src.element_size());
  a.bound = out.shape()[dim];
  a.inner = elements_after(shape, dim);
  a.index_1d = index_1d;
  a.first_bad = flag.data();
  launch_scatter_add(a, stream);
  check_flag(flag, index, op, out.shape()[dim], dim, out.shape());
}

}  // namespace

void CudaBackend::index_select(const Tensor& x, std::int64_t dim, const Tensor& index,
                               const Tensor& out) {
  gather_common(x, dim, index, out, true, "index_select");
}

void CudaBackend::gather(const Tensor& x, std::int64_t dim, const Tensor& index,
                         const Tensor& out) {
  gather_common(x, dim, index, out, false, "gather");
}

void CudaBackend::scatter_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                              const Tensor& src) {
  scatter_common(out, dim, index, src, false, "scatter_add");
}

void CudaBackend::index_add(const Tensor& out, std::int64_t dim, const Tensor& index,
                            const Tensor& src) {
  scatter_common(out, dim, index, src, true, "index_add");
}

void CudaBackend::one_hot(const Tensor& indices, const Tensor& out) {
  RUCCL_ASSERT(out.dtype() == DType::I64 && out.is_contiguous());
  check_supported(*this, Op::OneHot, indices.dtype());
  check_same_device("one_hot", indices, out);
  fill(out, 0);
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const BadIndexFlag flag(out.device(), stream);
  const Tensor idx = indices.contiguous();
  const std::int64_t classes = out.size(-1);
  launch_one_hot(ref(idx), classes, ref(out), flag.data(), stream);
  check_flag(flag, indices, "one_hot", classes, -1, out.shape());
}

}  // namespace ruccl::cuda
