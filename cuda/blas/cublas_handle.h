#pragma once
// cuBLAS handles: one per (thread, device), taken from a per-device pool the first time a thread
// asks and returned to it when the thread ends (handles are reused, never destroyed: destroying
// at process exit races the CUDA runtime's own teardown). handle_for() binds the handle to the
// stream the call is ordered on.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace ruccl::cuda {

/// The calling thread's cuBLAS handle for the current device, set to `stream`.
cublasHandle_t handle_for(cudaStream_t stream);

}  // namespace ruccl::cuda
