// CudaBackend::matmul through cublasGemmStridedBatchedEx. Row-major out[b] = a[b] @ b[b] is the
// column-major product out^T = b^T a^T, so cuBLAS sees (m, n, k) = (N, M, K) with b as its first
// operand. An operand whose rows or columns are contiguous (a transposed view included) is passed
// in place with the matching transpose flag and leading dimension; any other strides are copied
// to contiguous first; a batch stride of 0 (a broadcast operand) passes as is. out must be
// row-major with unit column stride, else the product goes to a temporary and is copied.
// Types: F32 (CUBLAS_COMPUTE_32F, or 32F_FAST_TF32 when set_allow_tf32(true)), F64 (64F),
// F16 and BF16 (F32 accumulation, 32F).
#include <atomic>
#include <limits>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/tensor_refs.h"
#include "cuda/blas/cublas_handle.h"
#include "cuda/core/check.h"

namespace ruccl::cuda {

namespace {

std::atomic<bool> g_allow_tf32{false};

/// A matrix (rows x cols, element strides rs, cs) as cuBLAS takes its transpose: column-major
/// cols x rows is the row-major matrix itself (op N, ld = rs); a column-major matrix is op T with
/// ld = cs.
struct Operand {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;
  std::int64_t ld = 1;
};

Operand as_transposed(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
  const std::int64_t c1 = std::max<std::int64_t>(cols, 1);
  const std::int64_t r1 = std::max<std::int64_t>(rows, 1);
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= c1))
    return {true, CUBLAS_OP_N, rows == 1 ? c1 : rs};
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= r1))
    return {true, CUBLAS_OP_T, cols == 1 ? r1 : cs};
  return {};
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::F64:
      return CUDA_R_64F;
    default:
      return CUDA_R_32F;
  }
}

int to_int(std::int64_t v, const char* what) {
  RUCCL_CHECK(v <= std::numeric_limits<int>::max(), ShapeError, "matmul: expected ", what,
              " below 2^31 for cuBLAS, got ", v);
  return static_cast<int>(v);
}

}  // namespace

void set_allow_tf32(bool allow) { g_allow_tf32.store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }

void CudaBackend::matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  check_supported(*this, Op::Matmul, a_in.dtype());
  check_same_device("matmul", a_in, out);
  check_same_device("matmul", b_in, out);
  RUCCL_ASSERT(a_in.dim() == 3 && b_in.dim() == 3 && out.dim() == 3 &&
               a_in.dtype() == b_in.dtype() && a_in.dtype() == out.dtype());
  const std::int64_t batch = out.shape()[0];
  const std::int64_t m = out.shape()[1];
  const std::int64_t n = out.shape()[2];
  const std::int64_t k = a_in.shape()[2];
  if (out.numel() == 0) return;
  if (k == 0) return fill(out, 0);
  const ScopedDevice scope(out.device());
  const cudaStream_t stream = stream_for(out.device());
  Tensor a = a_in;
  Tensor b = b_in;
  Operand oa = as_transposed(m, k, a.strides()[1], a.strides()[2]);
  if (!oa.ok) {
    a = a.contiguous();
    oa = as_transposed(m, k, a.strides()[1], a.strides()[2]);
  }
  Operand ob = as_transposed(k, n, b.strides()[1], b.strides()[2]);
  if (!ob.ok) {
    b = b.contiguous();
    ob = as_transposed(k, n, b.strides()[1], b.strides()[2]);
  }
  const bool out_ok = (out.strides()[2] == 1 || n == 1) &&
                      (m == 1 || out.strides()[1] >= std::max<std::int64_t>(n, 1)) &&
                      (batch == 1 || out.strides()[0] >= 0);
  const Tensor c = out_ok ? out : Tensor::empty(out.shape(), out.dtype(), out.device(), "matmul");
  const std::int64_t ldc = m == 1 ? std::max<std::int64_t>(n, 1) : c.strides()[1];
  const std::int64_t stride_a = batch == 1 ? 0 : a.strides()[0];
  const std::int64_t stride_b = batch == 1 ? 0 : b.strides()[0];
  const std::int64_t stride_c = batch == 1 ? 0 : c.strides()[0];
  const cudaDataType_t type = cuda_type(out.dtype());
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (out.dtype() == DType::F64) {
    compute = CUBLAS_COMPUTE_64F;
  } else if (out.dtype() == DType::F32 && allow_tf32()) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  const double alpha64 = 1.0;
  const double beta64 = 0.0;
  const float alpha32 = 1.0f;
  const float beta32 = 0.0f;
  const void* alpha = out.dtype() == DType::F64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = out.dtype() == DType::F64 ? static_cast<const void*>(&beta64) : &beta32;
  cublasHandle_t handle = handle_for(stream);
  RUCCL_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, ob.op, oa.op, to_int(n, "N"), to_int(m, "M"), to_int(k, "K"), alpha, b.data_ptr(),
      type, to_int(ob.ld, "a leading dimension"), stride_b, a.data_ptr(), type,
      to_int(oa.ld, "a leading dimension"), stride_a, beta, c.data_ptr(), type,
      to_int(ldc, "a leading dimension"), stride_c, to_int(batch, "the batch"), compute,
      CUBLAS_GEMM_DEFAULT));
  if (!out_ok) copy(c, out);
}

}  // namespace ruccl::cuda
