#pragma once
// Kernels used by the device self-test (cuda/core/self_test.cpp). Launchers take an explicit stream
// and check the launch.
#include <cuda_runtime.h>

#include <cstdint>

namespace ruccl::cuda {

/// y[i] = a * x[i] + b for i in [0, n), on `stream`. Throws CudaError when the launch fails.
void launch_affine(const float* x, float* y, std::int64_t n, float a, float b, cudaStream_t stream);

}  // namespace ruccl::cuda
