#pragma once
// Host-callable launchers of the CUDA backend's kernels, one .cu per op family:
//   copy_fill.cu            copy (dtype conversion, any strides), fill
//   elementwise_unary.cu    Neg ... Sign, LogicalNot
//   elementwise_binary.cu   Add ... Minimum, with a tensor or a scalar operand
//   elementwise_compare.cu  Eq ... Ge, LogicalAnd/Or (tensor or scalar operand), where
//   elementwise_in_place.cu AddInPlace ... DivInPlace: t = op(t, scalar) in t's memory
//   reduce.cu               Sum, Mean, Prod, Max, Min;  reduce_arg.cu  Argmax, Argmin
//   softmax.cu              Softmax, LogSoftmax
//   index.cu                index_select, gather, scatter_add, index_add, one_hot
//   optimizer.cu            fused SGD and Adam/AdamW steps
//   im2col.cu               Im2col, Col2im (convolution and pooling windows)
// Every launcher runs on `stream`, validates nothing the backend already checked, and throws
// CudaError when a launch fails. Operands are TensorRefs of out's shape unless said otherwise.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/tensor_ref.h"
#include "tensor/backend/backend.h"
#include "tensor/core/device.h"

namespace ruccl::cuda {

void launch_copy(const TensorRef& src, const TensorRef& dst, cudaStream_t stream);
void launch_fill(const TensorRef& dst, const ScalarArg& value, cudaStream_t stream);

void launch_unary(Op op, const TensorRef& x, const TensorRef& out, cudaStream_t stream);
/// LeakyRelu, Elu, Softplus (Backend::unary_params).
void launch_unary_params(Op op, const TensorRef& x, double p0, double p1, const TensorRef& out,
                         cudaStream_t stream);
/// Add, Sub, Mul, Div, Pow, Maximum, Minimum.
void launch_binary(Op op, const TensorRef& a, const TensorRef& b, const TensorRef& out,
                   cudaStream_t stream);
/// op(a, s) when !scalar_left, op(s, a) otherwise; out has a's shape.
void launch_binary_scalar(Op op, const TensorRef& a, const ScalarArg& s, bool scalar_left,
                          const TensorRef& out, cudaStream_t stream);
/// Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr (out is Bool).
void launch_compare(Op op, const TensorRef& a, const TensorRef& b, const TensorRef& out,
                    cudaStream_t stream);
void launch_compare_scalar(Op op, const TensorRef& a, const ScalarArg& s, bool scalar_left,
                           const TensorRef& out, cudaStream_t stream);
/// t = op(t, s) in place for AddInPlace, SubInPlace, MulInPlace, DivInPlace; t's elements share
/// no memory (any strides otherwise).
void launch_scalar_in_place(Op op, const TensorRef& t, const ScalarArg& s, cudaStream_t stream);
void launch_where(const TensorRef& cond, const TensorRef& a, const TensorRef& b,
                  const TensorRef& out, cudaStream_t stream);

/// Sum, Mean, Prod (launch_reduce_sum) and Max, Min (launch_reduce_minmax) of x over the dims
/// where reduced[d] into out (x's shape with those dims of size 1); x.numel() > 0. Scratch memory
/// comes from `device`'s allocator.
void launch_reduce_sum(Op op, const TensorRef& x, const bool* reduced, const TensorRef& out,
                       Device device, cudaStream_t stream);
void launch_reduce_minmax(Op op, const TensorRef& x, const bool* reduced, const TensorRef& out,
                          Device device, cudaStream_t stream);
/// Argmax or Argmin of x along dim into the I64 out; x.sizes[dim] > 0.
void launch_arg_reduce(Op op, const TensorRef& x, std::int64_t dim, const TensorRef& out,
                       cudaStream_t stream);

/// Softmax or LogSoftmax of the contiguous x viewed as [outer, n, inner] along n into the
/// contiguous out.
void launch_softmax(Op op, const TensorRef& x, std::int64_t outer, std::int64_t n,
                    std::int64_t inner, const TensorRef& out, cudaStream_t stream);

/// Im2col / Col2im (Backend::im2col, col2im) of contiguous F32 or F64 buffers.
void launch_im2col(const void* x, const Window2d& window, const ScalarArg& pad_value, void* cols,
                   DType dtype, cudaStream_t stream);
void launch_col2im(const void* cols, const Window2d& window, void* x, DType dtype,
                   cudaStream_t stream);

}  // namespace ruccl::cuda
