#include "cuda/core/cuda_error.h"

namespace ruccl {

const char* cuda_api_name(CudaApi api) {
  switch (api) {
    case CudaApi::Runtime:
      return "CUDA runtime";
    case CudaApi::Cublas:
      return "cuBLAS";
    case CudaApi::Nccl:
      return "NCCL";
  }
  return "CUDA";
}

CudaError::CudaError(CudaApi api, int code, const std::string& name, const std::string& description,
                     const char* statement, const char* file, int line)
    : Error(str(cuda_api_name(api), " error ", code, " (", name, ": ", description, ") in `",
                statement, "` at ", file, ":", line)),
      api_(api),
      code_(code),
      statement_(statement),
      file_(file),
      line_(line) {}

}  // namespace ruccl
