// CudaBackend::reduce and softmax: checks and layout here, kernels in cuda/kernels/reduce_*.cu
// and softmax.cu.
#include "cuda/backend/cuda_backend.h"

#include <limits>

#include "cuda/backend/tensor_refs.h"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

void CudaBackend::reduce(Op op, const Tensor& x, std::span<const std::int64_t> dims,
                         const Tensor& out) {
  check_supported(*this, op, x.dtype());
  check_same_device(op_name(op).data(), x, out);
  RUCCL_ASSERT(out.dim() == x.dim(), "cuda::", op_name(op));
  bool reduced[kMaxDims] = {};
  for (std::int64_t d = 0, k = 0; d < x.dim(); ++d) {
    reduced[d] = k < static_cast<std::int64_t>(dims.size()) && dims[k] == d;
    if (reduced[d]) ++k;
    RUCCL_ASSERT(out.shape()[d] == (reduced[d] ? 1 : x.shape()[d]), "cuda::", op_name(op), " out ",
                 out.shape(), " for x ", x.shape());
  }
  if (out.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  if (op == Op::Argmax || op == Op::Argmin) {
    RUCCL_ASSERT(dims.size() == 1 && out.dtype() == DType::I64);
    RUCCL_CHECK(x.shape()[dims[0]] > 0, IndexError, op_name(op), ": expected a non-empty dim ",
                dims[0], ", got shape ", x.shape());
    launch_arg_reduce(op, ref(x), dims[0], ref(out), stream);
    return;
  }
  if (x.numel() == 0) {  // the identity (Mean: 0 / 0)
    if (op == Op::Mean) return fill(out, std::numeric_limits<double>::quiet_NaN());
    return fill(out, op == Op::Prod ? 1 : 0);
  }
  if (op == Op::Max || op == Op::Min) {
    launch_reduce_minmax(op, ref(x), reduced, ref(out), out.device(), stream);
  } else {
    launch_reduce_sum(op, ref(x), reduced, ref(out), out.device(), stream);
  }
}

void CudaBackend::softmax(Op op, const Tensor& x, std::int64_t dim, const Tensor& out) {
  check_supported(*this, op, x.dtype());
  check_same_device(op_name(op).data(), x, out);
  RUCCL_ASSERT((op == Op::Softmax || op == Op::LogSoftmax) && x.shape() == out.shape() &&
               x.dtype() == out.dtype() && dim >= 0 && dim < x.dim());
  if (x.numel() == 0) return;
  const ScopedDevice scope(out.device());
  const Tensor xc = x.contiguous();
  const Tensor oc =
      out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::int64_t d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (std::int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  launch_softmax(op, ref(xc), outer, x.shape()[dim], inner, ref(oc), stream_for(out.device()));
  if (!out.is_contiguous()) copy(oc, out);
}

}  // namespace ruccl::cuda
