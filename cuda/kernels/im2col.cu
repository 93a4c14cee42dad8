// Im2col and Col2im (tensor/backend/window2d.h): one thread per cols element for im2col; one
// thread per input element for col2im, which gathers the cols entries that came from it in the
// order of the window offsets (Caffe's formulation: no atomics, so the sums are deterministic).
#include "cuda/core/check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/offset_calculator.h"

namespace ruccl::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    im2col_kernel(const T* __restrict__ x, Window2d w, T pad_value, T* __restrict__ cols) {
  // Window2d's helpers are host functions: the sizes are spelled out here.
  const std::int64_t cols_n = w.batch * w.out_h * w.out_w;
  const std::int64_t total = w.channels * w.kernel_h * w.kernel_w * cols_n;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const std::int64_t row = e / cols_n;
    const std::int64_t col = e % cols_n;
    const std::int64_t ox = col % w.out_w;
    const std::int64_t oy = col / w.out_w % w.out_h;
    const std::int64_t n = col / (w.out_w * w.out_h);
    const std::int64_t j = row % w.kernel_w;
    const std::int64_t i = row / w.kernel_w % w.kernel_h;
    const std::int64_t c = row / (w.kernel_w * w.kernel_h);
    const std::int64_t iy = oy * w.stride_h - w.pad_h + i * w.dilation_h;
    const std::int64_t ix = ox * w.stride_w - w.pad_w + j * w.dilation_w;
    const bool inside = iy >= 0 && iy < w.in_h && ix >= 0 && ix < w.in_w;
    cols[e] = inside ? x[((n * w.channels + c) * w.in_h + iy) * w.in_w + ix] : pad_value;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    col2im_kernel(const T* __restrict__ cols, Window2d w, T* __restrict__ x) {
  const std::int64_t total = w.batch * w.channels * w.in_h * w.in_w;
  const std::int64_t cols_n = w.batch * w.out_h * w.out_w;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const std::int64_t ix = e % w.in_w;
    const std::int64_t iy = e / w.in_w % w.in_h;
    const std::int64_t c = e / (w.in_w * w.in_h) % w.channels;
    const std::int64_t n = e / (w.in_w * w.in_h * w.channels);
    T sum = T(0);
    for (std::int64_t i = 0; i < w.kernel_h; ++i) {
      const std::int64_t ty = iy + w.pad_h - i * w.dilation_h;  // oy * stride_h
      if (ty < 0 || ty % w.stride_h != 0 || ty / w.stride_h >= w.out_h) continue;
      const std::int64_t oy = ty / w.stride_h;
      for (std::int64_t j = 0; j < w.kernel_w; ++j) {
        const std::int64_t tx = ix + w.pad_w - j * w.dilation_w;
        if (tx < 0 || tx % w.stride_w != 0 || tx / w.stride_w >= w.out_w) continue;
        const std::int64_t ox = tx / w.stride_w;
        const std::int64_t row = (c * w.kernel_h + i) * w.kernel_w + j;
        sum += cols[row * cols_n + (n * w.out_h + oy) * w.out_w + ox];
      }
    }
    x[e] = sum;
  }
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(grid_blocks(n, kThreads, max_resident_blocks(kThreads)));
}

}  // namespace

void launch_im2col(const void* x, const Window2d& window, const ScalarArg& pad_value, void* cols,
                   DType dtype, cudaStream_t stream) {
  const std::int64_t n = window.col_rows() * window.col_cols();
  if (n == 0) return;
  if (dtype == DType::F32) {
    im2col_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const float*>(x), window, pad_value.as<float>(), static_cast<float*>(cols));
  } else {
    RUCCL_ASSERT(dtype == DType::F64, "cuda::im2col for dtype ", dtype);
    im2col_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const double*>(x), window, pad_value.as<double>(), static_cast<double*>(cols));
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

void launch_col2im(const void* cols, const Window2d& window, void* x, DType dtype,
                   cudaStream_t stream) {
  const std::int64_t n = window.batch * window.channels * window.in_h * window.in_w;
  if (n == 0) return;
  if (dtype == DType::F32) {
    col2im_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(cols),
                                                                 window, static_cast<float*>(x));
  } else {
    RUCCL_ASSERT(dtype == DType::F64, "cuda::col2im for dtype ", dtype);
    col2im_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const double*>(cols),
                                                                  window, static_cast<double*>(x));
  }
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ruccl::cuda
