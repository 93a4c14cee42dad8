// The mapping of a row-major strided product onto cuBLAS's column-major GEMM
// (cuda/blas/gemm_layout.h), checked by running the planned call through a reference of
// cublasGemmEx's semantics on the host and comparing with the product computed from the strides.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "cuda/blas/gemm_layout.h"

using namespace ruccl::cuda;

namespace {

/// A rows x cols matrix in a buffer with element strides (rs, cs).
struct View {
  std::int64_t rows, cols, rs, cs;
  std::vector<double> buf;
  double at(std::int64_t i, std::int64_t j) const { return buf[i * rs + j * cs]; }
};

View make_view(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs,
               double seed) {
  View v{rows, cols, rs, cs, {}};
  const std::int64_t extent = (rows - 1) * rs + (cols - 1) * cs + 1;
  v.buf.resize(static_cast<std::size_t>(extent), -999.0);  // gaps hold a poison value
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j)
      v.buf[i * rs + j * cs] = seed + 0.5 * i - 0.25 * j + i * j;
  }
  return v;
}

/// cublasGemmEx's column-major C = op(A) op(B) (alpha 1, beta 0).
void reference_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                    const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double* c,
                    std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        const double av = ta ? a[l + i * lda] : a[i + l * lda];
        const double bv = tb ? b[j + l * ldb] : b[l + j * ldb];
        s += av * bv;
      }
      c[i + j * ldc] = s;
    }
  }
}

/// Plans and runs out = a @ b through the reference and compares with the strided product.
void check_product(const View& a, const View& b) {
  const std::int64_t m = a.rows;
  const std::int64_t k = a.cols;
  const std::int64_t n = b.cols;
  const GemmOperand oa = gemm_operand(m, k, a.rs, a.cs);
  const GemmOperand ob = gemm_operand(k, n, b.rs, b.cs);
  REQUIRE(oa.ok);
  REQUIRE(ob.ok);
  const GemmOperand oc = gemm_output(m, n, n, 1);
  REQUIRE(oc.ok);
  std::vector<double> out(static_cast<std::size_t>(m * n), 0.0);
  reference_gemm(ob.transpose, oa.transpose, n, m, k, b.buf.data(), ob.ld, a.buf.data(), oa.ld,
                 out.data(), oc.ld);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (std::int64_t l = 0; l < k; ++l) expected += a.at(i, l) * b.at(l, j);
      INFO("out[" << i << ", " << j << "]");
      REQUIRE(out[static_cast<std::size_t>(i * n + j)] == expected);
    }
  }
}

}  // namespace

TEST_CASE("row-major, transposed and padded operands map onto one column-major GEMM",
          "[cuda_host]") {
  const std::int64_t m = 5, k = 4, n = 3;
  const std::vector<View> as = {make_view(m, k, k, 1, 1.0),      // contiguous
                                make_view(m, k, 1, m, 2.0),      // a transposed view
                                make_view(m, k, k + 3, 1, 3.0),  // rows padded (narrowed)
                                make_view(m, k, 1, m + 2, 4.0)};
  const std::vector<View> bs = {make_view(k, n, n, 1, 5.0), make_view(k, n, 1, k, 6.0),
                                make_view(k, n, n + 5, 1, 7.0), make_view(k, n, 1, k + 1, 8.0)};
  for (std::size_t i = 0; i < as.size(); ++i) {
    for (std::size_t j = 0; j < bs.size(); ++j) {
      INFO("a layout " << i << ", b layout " << j);
      check_product(as[i], bs[j]);
    }
  }
}

TEST_CASE("vector-shaped operands take any stride on their size-1 side", "[cuda_host]") {
  check_product(make_view(1, 6, 999, 1, 1.0), make_view(6, 4, 4, 1, 2.0));  // a row vector
  check_product(make_view(1, 6, 0, 3, 1.0), make_view(6, 1, 1, 0, 2.0));    // strided dot
  check_product(make_view(5, 1, 7, 42, 1.0), make_view(1, 3, 11, 1, 2.0));  // outer product
}

TEST_CASE("general strides have no BLAS layout and outputs must be row-major", "[cuda_host]") {
  CHECK_FALSE(gemm_operand(4, 5, 10, 2).ok);  // every other column
  CHECK_FALSE(gemm_operand(4, 5, 3, 1).ok);   // rows overlap (row stride < columns)
  CHECK_FALSE(gemm_operand(4, 5, 0, 1).ok);   // a row broadcast down the matrix
  CHECK(gemm_output(4, 5, 5, 1).ok);
  CHECK(gemm_output(4, 5, 8, 1).ld == 8);
  CHECK_FALSE(gemm_output(4, 5, 1, 4).ok);  // a column-major output
}
