#pragma once
// How a row-major batched product out[b] = a[b] @ b[b] maps onto one column-major
// cublasGemmStridedBatchedEx call (host-only arithmetic, unit-tested in tests/cuda_host against a
// reference of cuBLAS's column-major semantics).
//
// Row-major out = a b is column-major out^T = b^T a^T, so cuBLAS computes C (m x n) = op(A) op(B)
// with (m, n, k) = (N, M, K), A = b and B = a. A row-major matrix (column stride 1) read as
// column-major is its own transpose: op N with ld = row stride. A column-major matrix (row stride
// 1) needs op T with ld = column stride. Anything else (general strides) has no BLAS layout.
#include <algorithm>
#include <cstdint>

namespace ruccl::cuda {

/// One operand as cuBLAS takes it: whether it needs transposing and its leading dimension.
struct GemmOperand {
  bool ok = false;         // false: no BLAS layout, make it contiguous first
  bool transpose = false;  // CUBLAS_OP_T
  std::int64_t ld = 1;
};

/// The cuBLAS view of the transpose of a rows x cols row-major-indexed matrix with element
/// strides (rs, cs). Sizes of 1 accept any stride on that side (the stride is never used).
inline GemmOperand gemm_operand(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                std::int64_t cs) {
  const std::int64_t c1 = std::max<std::int64_t>(cols, 1);
  const std::int64_t r1 = std::max<std::int64_t>(rows, 1);
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= c1)) return {true, false, rows == 1 ? c1 : rs};
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= r1)) return {true, true, cols == 1 ? r1 : cs};
  return {};
}

/// Whether cuBLAS can write a rows x cols output with element strides (rs, cs) (row-major with
/// unit column stride), and its leading dimension.
inline GemmOperand gemm_output(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                               std::int64_t cs) {
  const std::int64_t c1 = std::max<std::int64_t>(cols, 1);
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= c1)) return {true, false, rows == 1 ? c1 : rs};
  return {};
}

}  // namespace ruccl::cuda
