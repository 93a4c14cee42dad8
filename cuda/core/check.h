#pragma once
// The one checked wrapper per CUDA library: every CUDA runtime, cuBLAS and NCCL status goes through
// RUCCL_CUDA_CHECK / RUCCL_CUBLAS_CHECK / RUCCL_NCCL_CHECK, which throw ruccl::CudaError naming the
// statement, file and line. Never exit() or abort() in the library.
//
//   RUCCL_CUDA_CHECK(cudaMalloc(&ptr, nbytes));
//   RUCCL_CUBLAS_CHECK(cublasSgemm(handle, ...));
//   RUCCL_NCCL_CHECK(ncclAllReduce(...));
//   launch_affine(x, y, n, a, b, stream);  // launchers check cudaGetLastError() this way
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "cuda/core/cuda_error.h"

namespace ruccl::cuda::detail {

/// Throws CudaError for a failed CUDA runtime call (and clears the runtime's last-error slot).
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* statement, const char* file,
                                   int line);
/// Throws CudaError for a failed cuBLAS call.
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* statement, const char* file,
                                     int line);
/// Throws CudaError for a failed NCCL call, adding NCCL's last error text when it has one.
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* statement, const char* file,
                                   int line);

}  // namespace ruccl::cuda::detail

/// Evaluates a CUDA runtime call once; throws ruccl::CudaError unless it returns cudaSuccess.
#define RUCCL_CUDA_CHECK(statement)                                                                \
  do {                                                                                             \
    const cudaError_t ruccl_cuda_status_ = (statement);                                            \
    if (ruccl_cuda_status_ != cudaSuccess) [[unlikely]] {                                          \
      ::ruccl::cuda::detail::throw_cuda_error(ruccl_cuda_status_, #statement, __FILE__, __LINE__); \
    }                                                                                              \
  } while (false)

/// Evaluates a cuBLAS call once; throws ruccl::CudaError unless it returns CUBLAS_STATUS_SUCCESS.
#define RUCCL_CUBLAS_CHECK(statement)                                                       \
  do {                                                                                      \
    const cublasStatus_t ruccl_cublas_status_ = (statement);                                \
    if (ruccl_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                       \
      ::ruccl::cuda::detail::throw_cublas_error(ruccl_cublas_status_, #statement, __FILE__, \
                                                __LINE__);                                  \
    }                                                                                       \
  } while (false)

/// Evaluates an NCCL call once; throws ruccl::CudaError unless it returns ncclSuccess.
#define RUCCL_NCCL_CHECK(statement)                                                                \
  do {                                                                                             \
    const ncclResult_t ruccl_nccl_status_ = (statement);                                           \
    if (ruccl_nccl_status_ != ncclSuccess) [[unlikely]] {                                          \
      ::ruccl::cuda::detail::throw_nccl_error(ruccl_nccl_status_, #statement, __FILE__, __LINE__); \
    }                                                                                              \
  } while (false)
