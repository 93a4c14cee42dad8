#pragma once
// Tensor -> TensorRef for the kernel launchers, and the checks every CudaBackend call makes.
#include "cuda/backend/runtime.h"
#include "cuda/kernels/tensor_ref.h"
#include "tensor/backend/backend.h"
#include "tensor/core/tensor.h"

namespace ruccl::cuda {

inline TensorRef ref(const Tensor& t) {
  TensorRef r;
  r.data = t.data_ptr();
  r.dtype = t.dtype();
  r.ndim = static_cast<int>(t.dim());
  for (int d = 0; d < r.ndim; ++d) {
    r.sizes[d] = t.shape()[d];
    r.strides[d] = t.strides()[d];
  }
  return r;
}

/// `t` viewed with `shape` and `strides` (same storage, offset and dtype).
inline TensorRef ref_as(const Tensor& t, const Shape& shape, const Shape& strides) {
  TensorRef r = ref(t);
  r.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < r.ndim; ++d) {
    r.sizes[d] = shape[d];
    r.strides[d] = strides[d];
  }
  return r;
}

inline ScalarArg scalar_arg(Scalar s) {
  return {s.to_double(), s.is_integral() ? s.to_int() : 0, s.is_integral()};
}

/// NotImplementedError "not implemented: cuda::<op> for dtype <dtype>" unless supported.
void check_supported(const Backend& backend, Op op, DType dtype);

/// Every tensor of a call on one CUDA device: DeviceError naming both devices otherwise.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);

}  // namespace ruccl::cuda
