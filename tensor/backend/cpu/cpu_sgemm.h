#pragma once
// ruCCL's own float32 GEMM for AVX-512 CPUs (cpu_sgemm.cpp): a GotoBLAS/BLIS-style blocked product
// with a 12 x 32 register-tiled micro-kernel, whose packed right operand is shared by all threads.
// cpu_matmul.cpp uses it for float products that are not matrix-vector or tiny, when
// sgemm_available(); double, and every CPU without AVX-512, stays on Eigen's GEMM.
//
// The kernel is chosen at run time, not by -march: on x86-64 it is always compiled (its functions
// carry target("avx512f,...") attributes, so only they use AVX-512 and nothing shared with other
// translation units does), and sgemm_available() asks the CPU once. A portable build
// (RUCCL_MARCH=x86-64-v3, or a package built for other machines) thus runs the AVX-512 kernel
// where the CPU has it and Eigen elsewhere.
#include <cstdint>

namespace ruccl::cpu {

/// Whether cpu::sgemm runs here: the build is for x86-64 and the CPU (and OS) support AVX-512 F,
/// BW, DQ and VL, and FMA. Asked once, then cached.
bool sgemm_available();

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
/// Requires sgemm_available() (throws NotImplementedError otherwise).
void sgemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b, float* c,
           std::int64_t ldc, int threads);

}  // namespace ruccl::cpu
