#include "cuda/core/check.h"

#include <string>

namespace ruccl::cuda::detail {

void throw_cuda_error(cudaError_t status, const char* statement, const char* file, int line) {
  // A failed call also sets the runtime's last error; clear it so the next check does not see a
  // stale status. (Sticky errors, e.g. after a kernel fault, stay: the context is unusable.)
  (void)cudaGetLastError();
  throw CudaError(CudaApi::Runtime, static_cast<int>(status), cudaGetErrorName(status),
                  cudaGetErrorString(status), statement, file, line);
}

void throw_cublas_error(cublasStatus_t status, const char* statement, const char* file, int line) {
  throw CudaError(CudaApi::Cublas, static_cast<int>(status), cublasGetStatusName(status),
                  cublasGetStatusString(status), statement, file, line);
}

void throw_nccl_error(ncclResult_t status, const char* statement, const char* file, int line) {
  std::string description = ncclGetErrorString(status);
  const char* last = ncclGetLastError(nullptr);  // the calling thread's last NCCL error text
  if (last != nullptr && last[0] != '\0') {
    description += str("; NCCL says: ", last);
  }
  throw CudaError(CudaApi::Nccl, static_cast<int>(status), str("ncclResult ", int(status)),
                  description, statement, file, line);
}

}  // namespace ruccl::cuda::detail
