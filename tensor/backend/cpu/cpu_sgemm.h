#pragma once
// ruCCL's own float32 GEMM for AVX-512 CPUs (cpu_sgemm.cpp): a GotoBLAS/BLIS-style blocked product
// with a 12 x 32 register-tiled micro-kernel, whose packed right operand is shared by all threads.
// cpu_matmul.cpp uses it for float products that are not matrix-vector or tiny; double, and every
// CPU without AVX-512, stays on Eigen's GEMM.
#include <cstdint>

namespace ruccl::cpu {

/// Whether this build has the AVX-512 float GEMM (compiled for a target with AVX-512F).
#if defined(__AVX512F__)
inline constexpr bool kHasSgemmKernel = true;
#else
inline constexpr bool kHasSgemmKernel = false;
#endif

/// A float matrix in memory: element (i, j) at data[i * row_stride + j * col_stride].
struct MatrixRef {
  const float* data;
  std::int64_t row_stride;
  std::int64_t col_stride;
};

/// C[m, n] (row-major, leading dimension ldc) = A[m, k] * B[k, n], on up to `threads` threads of
/// the CPU pool (fewer than 1 counts as 1). Any strides work; A and B fastest when one of their
/// strides is 1. C must not overlap A or B (C is written while they are still being read). The
/// result does not depend on `threads`: every element sums its k products in the same order.
/// Requires kHasSgemmKernel (throws NotImplementedError otherwise).
void sgemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b, float* c,
           std::int64_t ldc, int threads);

}  // namespace ruccl::cpu
