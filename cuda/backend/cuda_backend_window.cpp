// CudaBackend::im2col and col2im: checks here, kernels in cuda/kernels/im2col.cu.
#include "cuda/backend/cuda_backend.h"

#include "cuda/backend/tensor_refs.h"
#include "cuda/kernels/kernels.h"

namespace ruccl::cuda {

void CudaBackend::im2col(const Tensor& x, const Window2d& window, Scalar pad_value,
                         const Tensor& cols) {
  check_supported(*this, Op::Im2col, x.dtype());
  check_same_device("im2col", x, cols);
  RUCCL_ASSERT(x.is_contiguous() && cols.is_contiguous() && x.dtype() == cols.dtype());
  RUCCL_ASSERT(cols.numel() == window.col_rows() * window.col_cols());
  const ScopedDevice scope(cols.device());
  launch_im2col(x.data_ptr(), window, scalar_arg(pad_value), cols.data_ptr(), x.dtype(),
                stream_for(cols.device()));
}

void CudaBackend::col2im(const Tensor& cols, const Window2d& window, const Tensor& x) {
  check_supported(*this, Op::Col2im, cols.dtype());
  check_same_device("col2im", cols, x);
  RUCCL_ASSERT(x.is_contiguous() && cols.is_contiguous() && x.dtype() == cols.dtype());
  RUCCL_ASSERT(cols.numel() == window.col_rows() * window.col_cols());
  const ScopedDevice scope(x.device());
  launch_col2im(cols.data_ptr(), window, x.data_ptr(), x.dtype(), stream_for(x.device()));
}

}  // namespace ruccl::cuda
