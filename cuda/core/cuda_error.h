#pragma once
// CudaError: a failed CUDA runtime, cuBLAS or NCCL call. Thrown only by the checked-call macros of
// cuda/core/check.h; this header has no CUDA includes so host-only code can catch it.
#include <string>

#include "tensor/core/error.h"

namespace ruccl {

/// Which library returned the failing status.
enum class CudaApi { Runtime, Cublas, Nccl };

/// "CUDA runtime", "cuBLAS" or "NCCL".
const char* cuda_api_name(CudaApi api);

/// A CUDA runtime, cuBLAS or NCCL call that did not return success. The message reads
/// "CUDA runtime error 2 (cudaErrorMemoryAllocation: out of memory) in `cudaMalloc(&p, n)` at
/// cuda/core/device.cpp:40"; the parts are kept for callers that branch on them.
class CudaError : public Error {
 public:
  /// `code` is the library's status value; `name` and `description` its texts.
  CudaError(CudaApi api, int code, const std::string& name, const std::string& description,
            const char* statement, const char* file, int line);

  /// The library that failed.
  CudaApi api() const { return api_; }
  /// The raw status (cudaError_t, cublasStatus_t or ncclResult_t as int).
  int code() const { return code_; }
  /// The checked statement as written at the call site.
  const std::string& statement() const { return statement_; }
  /// Source file of the call site.
  const std::string& file() const { return file_; }
  /// Source line of the call site.
  int line() const { return line_; }

 private:
  CudaApi api_;
  int code_;
  std::string statement_;
  std::string file_;
  int line_;
};

}  // namespace ruccl
