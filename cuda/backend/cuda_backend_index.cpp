// CudaBackend index ops: views and arguments here, kernels (with the device-side bounds checks)
// in cuda/kernels/index.cu. After each kernel a report kernel records the first bad index, if
// any, in the device's record (cuda/kernels/index_report.h); the IndexError, in the CPU backend's
// words, is raised at the next synchronising call (index_errors.h), not here.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/index_errors.h"
#include "cuda/backend/tensor_refs.h"
#include "cuda/core/check.h"
#include "cuda/kernels/index_kernels.h"
#include "tensor/backend/index_bounds.h"

namespace ruccl::cuda {

namespace {

/// A device word holding the first bad position (UINT64_MAX: none yet), scratch for one op.
class BadIndexFlag {
 public:
  BadIndexFlag(Device device, cudaStream_t stream) : ws_(sizeof(unsigned long long), device) {
    RUCCL_CUDA_CHECK(cudaMemsetAsync(ws_.data(), 0xff, sizeof(unsigned long long), stream));
  }
  unsigned long long* data() const { return static_cast<unsigned long long*>(ws_.data()); }

 private:
  Workspace ws_;
};

/// Queues the report of the op's first bad index, if any, into the device's record
/// (index_errors.h): no host wait; the IndexError (the CPU backend's words,
/// throw_index_out_of_bounds) is raised at the next synchronising call. The flag's scratch word
/// goes back to the allocator after this, in stream order (the report reads it first).
void report_flag(const BadIndexFlag& flag, const Tensor& index, IndexOpCode op, std::int64_t bound,
                 std::int64_t dim, const Shape& of, Device device, cudaStream_t stream) {
  IndexErrorInfo info;
  info.op = op;
  info.index = ref(index);
  info.bound = bound;
  info.dim = dim;
  info.of_ndim = static_cast<int>(of.size());
  for (int d = 0; d < info.of_ndim; ++d) info.of_sizes[d] = of[d];
  launch_index_report(flag.data(), info, index_error_record(device), stream);
}

/// The bounds check when no kernel runs (an empty output with a non-empty index: the CPU backend
/// still rejects a bad index there). Rare, so the index is read on the host.
void check_on_host(const Tensor& index, std::int64_t bound, const char* op, std::int64_t dim,
                   const Shape& of) {
  if (index.numel() == 0) return;
  const auto values = index.to(Device::cpu()).to(DType::I64).to_vector<std::int64_t>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] >= bound) {
      throw_index_out_of_bounds(op, values[i], static_cast<std::int64_t>(i), index.shape(), bound,
                                dim, of);
    }
  }
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
  if (out.numel() == 0) return check_on_host(index, x.shape()[dim], op, dim, x.shape());
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
  report_flag(flag, index, select ? IndexOpCode::kIndexSelect : IndexOpCode::kGather,
              x.shape()[dim], dim, x.shape(), out.device(), stream);
}

void scatter_common(const Tensor& out, std::int64_t dim, const Tensor& index, const Tensor& src,
                    bool index_1d, const char* op) {
  check_supported(backend(), index_1d ? Op::IndexAdd : Op::ScatterAdd, out.dtype());
  check_same_device(op, out, src);
  check_same_device(op, out, index);
  const Shape& shape = index_1d ? src.shape() : index.shape();
  if (shape.numel() == 0) return check_on_host(index, out.shape()[dim], op, dim, out.shape());
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
  report_flag(flag, index, index_1d ? IndexOpCode::kIndexAdd : IndexOpCode::kScatterAdd,
              out.shape()[dim], dim, out.shape(), out.device(), stream);
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
  if (out.numel() == 0) return check_on_host(indices, out.size(-1), "one_hot", -1, out.shape());
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  const BadIndexFlag flag(out.device(), stream);
  const Tensor idx = indices.contiguous();
  const std::int64_t classes = out.size(-1);
  launch_one_hot(ref(idx), classes, ref(out), flag.data(), stream);
  report_flag(flag, idx, IndexOpCode::kOneHot, classes, -1, out.shape(), out.device(), stream);
}

}  // namespace ruccl::cuda
