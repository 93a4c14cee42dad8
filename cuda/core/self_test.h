#pragma once
// A quick end-to-end check of one GPU: device memory, a kernel of ours (nvcc path), cuBLAS and
// NCCL's library version. Used by tests/cuda and by programs that want to fail early and clearly.
#include <string>

namespace ruccl::cuda {

/// What run_self_test() measured.
struct SelfTestReport {
  int device = 0;
  std::string device_status;  ///< device_status() at the time of the test
  int nccl_version = 0;       ///< ncclGetVersion, e.g. 22807 for 2.28.7
  int cublas_version = 0;     ///< cublasGetVersion
};

/// Runs y = a*x + b (our kernel) and a cuBLAS dot product on `device` over a few thousand floats
/// whose results are exact in float32, and compares with the closed form. Throws DeviceError when
/// there is no such device, CudaError when a call fails, InternalError on a wrong value.
SelfTestReport run_self_test(int device = 0);

}  // namespace ruccl::cuda
