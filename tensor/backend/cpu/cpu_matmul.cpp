// CpuBackend::matmul: batched GEMM. Float products of 64^3 multiply-adds or more run on ruCCL's own
// AVX-512 kernel (cpu_sgemm.h), which splits itself over the CPU pool, on every CPU where
// cpu::sgemm_available() (a run-time check, whatever -march the build used); double, smaller float
// products and CPUs without AVX-512 run on Eigen 3.4's blocked kernel (gebp), with our threading.
//
// Each [M, K] x [K, N] product maps its operands in place (row- or column-major with a leading
// dimension, so transposed views need no copy; other strides are copied to contiguous first). On
// the Eigen path it runs Eigen's sequential general_matrix_matrix_product with packing buffers kept
// per thread, so a GEMM allocates nothing after the first call (fresh 256 KiB+ buffers per call
// cost page faults: n = 256 ran at 35 instead of 200 GFLOP/s). Parallelism comes from the CPU pool
// (cpu_parallel.h), not from Eigen's OpenMP path: a large product is split into row (or column)
// bands, one per thread; a batch of small products is split across batch items, each computed
// serially. One pool for every CPU kernel means no two spinning pools fighting over the cores, and
// it stays clean under ThreadSanitizer (libgomp is not instrumented).
#define EIGEN_DONT_PARALLELIZE  // threading is ours (see above)
// g++ 12 flags its own AVX-512 intrinsics (avx512fintrin.h, `__Y`) once Eigen's packet code is
// inlined here: a known false positive of -W(maybe-)uninitialized, silenced for this file only.
#if !defined(__clang__)  // clang has no -Wmaybe-uninitialized (and no such false positive)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <Eigen/Core>
#include "tensor/backend/cpu/eigen_gebp_traits.h"  // must precede any GEMM instantiation

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <type_traits>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/cpu/cpu_sgemm.h"
#include "tensor/backend/cpu/thread_buffer.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

namespace {

using Index = Eigen::Index;

/// Below this many multiply-adds a product runs on one thread (about 25 µs of work, the order of
/// waking a pool worker on a virtual machine).
constexpr std::int64_t kParallelMinMacs = std::int64_t{1} << 21;
/// From this many multiply-adds a float product runs on cpu::sgemm; below, Eigen's small-product
/// paths are faster (measured crossover near 64 x 64 x 64: 8^3 ran at 4 GFLOP/s on sgemm, 9 on
/// Eigen; 128^3 at 150 and 112).
constexpr std::int64_t kSgemmMinMacs = std::int64_t{1} << 18;
/// Row/column bands given to threads are multiples of this (whole vector packets; balance between
/// the bands matters more than ending on a whole 48-row micro-panel).
constexpr std::int64_t kBandAlign = 16;

/// thread_buffer slot of Eigen's packed blocks (cpu_sgemm.cpp uses its own slots).
constexpr int kEigenSlot = 0;

std::atomic<int> g_num_threads{0};  // 0: not set, use the hardware's cores

/// How a matrix sits in memory for BLAS: row- or column-major with leading dimension `ld`.
struct Layout {
  bool row_major = true;
  std::int64_t ld = 1;
};

/// The BLAS layout of a rows x cols matrix with element strides (rs, cs), or false if there is
/// none (general strides, broadcast rows/columns).
bool blas_layout(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs,
                 Layout& out) {
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<std::int64_t>(cols, 1))) {
    out = {true, rows == 1 ? std::max<std::int64_t>(cols, 1) : rs};
    return true;
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<std::int64_t>(rows, 1))) {
    out = {false, cols == 1 ? std::max<std::int64_t>(rows, 1) : cs};
    return true;
  }
  return false;
}

/// Eigen's cache blocking for a (rows x depth) * (depth x cols) column-major product, with the
/// packed blocks in this thread's scratch memory instead of fresh allocations.
template <typename T>
class ScratchBlocking : public Eigen::internal::level3_blocking<T, T> {
 public:
  ScratchBlocking(Index rows, Index cols, Index depth) {
    this->m_mc = rows;
    this->m_nc = cols;
    this->m_kc = depth;
    Eigen::internal::computeProductBlockingSizes<T, T, 1>(this->m_kc, this->m_mc, this->m_nc,
                                                          Index(1));
    const auto round = [](std::size_t n) { return (n + 63) / 64 * 64; };  // keep B aligned
    const std::size_t size_a =
        round(static_cast<std::size_t>(this->m_kc * std::min(rows, this->m_mc)));
    const std::size_t size_b = static_cast<std::size_t>(this->m_kc * std::min(cols, this->m_nc));
    T* scratch = thread_buffer<T, kEigenSlot>(size_a + size_b);
    this->m_blockA = scratch;
    this->m_blockB = scratch + size_a;
  }
};

/// Row-major C[M, N] (leading dim ldc) = A[M, K] * B[K, N], on the calling thread.
template <typename T, int AOrder, int BOrder>
void gemm_serial(Index m, Index n, Index k, const T* a, Index lda, const T* b, Index ldb, T* c,
                 Index ldc) {
  using AMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, AOrder>;
  using BMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, BOrder>;
  using CMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<CMatrix, Eigen::Unaligned, Stride> cm(c, m, n, Stride(ldc));
  if (k == 0) {
    cm.setZero();
    return;
  }
  if (m == 1 || n == 1 || m + n + k < EIGEN_GEMM_TO_COEFFBASED_THRESHOLD) {
    // Matrix-vector products and tiny matrices: Eigen's GEMV / coefficient-wise paths.
    const Eigen::Map<const AMatrix, Eigen::Unaligned, Stride> am(a, m, k, Stride(lda));
    const Eigen::Map<const BMatrix, Eigen::Unaligned, Stride> bm(b, k, n, Stride(ldb));
    cm.noalias() = am * bm;
    return;
  }
  // gebp accumulates into C. Eigen computes the row-major C as the column-major C^T = B^T A^T,
  // so the blocking is for rows = n, cols = m.
  cm.setZero();
  ScratchBlocking<T> blocking(n, m, k);
  Eigen::internal::general_matrix_matrix_product<Index, T, AOrder, false, T, BOrder, false,
                                                 Eigen::RowMajor, 1>::run(m, n, k, a, lda, b, ldb,
                                                                          c, 1, ldc, T(1), blocking,
                                                                          nullptr);
}

/// One [M, K] x [K, N] product, split into bands over `threads` threads when it is large.
template <typename T, int AOrder, int BOrder>
void gemm(Index m, Index n, Index k, const T* a, Index lda, const T* b, Index ldb, T* c, Index ldc,
          int threads) {
  if constexpr (std::is_same_v<T, float>) {
    if (m > 1 && n > 1 && m * n * k >= kSgemmMinMacs && sgemm_available()) {
      const auto ref = [](const T* p, Index ld, bool row_major) {
        return row_major ? MatrixRef{p, ld, 1} : MatrixRef{p, 1, ld};
      };
      sgemm(m, n, k, ref(a, lda, AOrder == Eigen::RowMajor), ref(b, ldb, BOrder == Eigen::RowMajor),
            c, ldc, threads);
      return;
    }
  }
  const std::int64_t macs = m * n * k;
  const bool split_rows = m >= n;
  const Index extent = split_rows ? m : n;
  std::int64_t bands = threads;
  if (macs < kParallelMinMacs) bands = 1;
  bands = std::min<std::int64_t>(bands, (extent + kBandAlign - 1) / kBandAlign);
  if (bands <= 1) {
    gemm_serial<T, AOrder, BOrder>(m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  const Index band = ((extent + bands - 1) / bands + kBandAlign - 1) / kBandAlign * kBandAlign;
  parallel_for(bands, static_cast<int>(bands), [&](std::int64_t i) {
    const Index start = i * band;
    const Index length = std::min(band, extent - start);
    if (length <= 0) return;
    if (split_rows) {  // rows [start, start + length) of A and C
      const T* a_band = a + (AOrder == Eigen::RowMajor ? start * lda : start);
      gemm_serial<T, AOrder, BOrder>(length, n, k, a_band, lda, b, ldb, c + start * ldc, ldc);
    } else {  // columns [start, start + length) of B and C
      const T* b_band = b + (BOrder == Eigen::RowMajor ? start : start * ldb);
      gemm_serial<T, AOrder, BOrder>(m, length, k, a, lda, b_band, ldb, c + start, ldc);
    }
  });
}

/// A batched operand: element 0, the element stride between batch items, and its matrix layout.
template <typename T>
struct Operand {
  const T* data;
  std::int64_t batch_stride;
  Layout layout;
};

/// `t` ([B, R, C]) as an Operand; copies to contiguous memory first when its matrix strides have
/// no BLAS layout (a batch broadcast with stride 0 stays one matrix). `keep` holds the copy.
template <typename T>
Operand<T> make_operand(const Tensor& t, Tensor& keep) {
  Layout layout;
  keep = t;
  if (!blas_layout(t.size(1), t.size(2), t.strides()[1], t.strides()[2], layout)) {
    keep = t.strides()[0] == 0 ? t.select(0, 0).contiguous().unsqueeze(0).expand(t.shape())
                               : t.contiguous();
    blas_layout(keep.size(1), keep.size(2), keep.strides()[1], keep.strides()[2], layout);
  }
  return {keep.data<T>(), keep.size(0) == 1 ? 0 : keep.strides()[0], layout};
}

template <typename T, int AOrder, int BOrder>
void batched_gemm(const Operand<T>& a, const Operand<T>& b, T* c, std::int64_t batch,
                  std::int64_t m, std::int64_t n, std::int64_t k) {
  const int threads = num_threads();
  const Index lda = a.layout.ld;
  const Index ldb = b.layout.ld;
  // One shared right operand and row-major left operands stacked in memory: one tall product.
  if (batch > 1 && b.batch_stride == 0 && AOrder == Eigen::RowMajor && a.batch_stride == m * lda) {
    gemm<T, AOrder, BOrder>(batch * m, n, k, a.data, lda, b.data, ldb, c, n, threads);
    return;
  }
  const auto item = [&](std::int64_t i, int item_threads) {
    gemm<T, AOrder, BOrder>(m, n, k, a.data + i * a.batch_stride, lda, b.data + i * b.batch_stride,
                            ldb, c + i * m * n, n, item_threads);
  };
  const std::int64_t macs = m * n * k;
  if (batch == 1 || macs >= kParallelMinMacs || threads <= 1 || batch * macs < kParallelMinMacs) {
    for (std::int64_t i = 0; i < batch; ++i) item(i, threads);  // each item splits itself
    return;
  }
  // Many small products: whole items per thread, never a parallel region per item.
  parallel_for(batch, threads, [&](std::int64_t i) { item(i, 1); });
}

template <typename T>
void matmul_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::int64_t batch = out.size(0);
  const std::int64_t m = out.size(1);
  const std::int64_t n = out.size(2);
  const std::int64_t k = a.size(2);
  if (out.numel() == 0) return;
  Tensor a_keep;
  Tensor b_keep;
  const Operand<T> ao = make_operand<T>(a, a_keep);
  const Operand<T> bo = make_operand<T>(b, b_keep);
  T* c = out.data<T>();
  if (ao.layout.row_major && bo.layout.row_major) {
    batched_gemm<T, Eigen::RowMajor, Eigen::RowMajor>(ao, bo, c, batch, m, n, k);
  } else if (ao.layout.row_major) {
    batched_gemm<T, Eigen::RowMajor, Eigen::ColMajor>(ao, bo, c, batch, m, n, k);
  } else if (bo.layout.row_major) {
    batched_gemm<T, Eigen::ColMajor, Eigen::RowMajor>(ao, bo, c, batch, m, n, k);
  } else {
    batched_gemm<T, Eigen::ColMajor, Eigen::ColMajor>(ao, bo, c, batch, m, n, k);
  }
}

/// `t` converted to F32, keeping a stride-0 batch broadcast as one matrix.
Tensor to_f32(const Tensor& t) {
  if (t.size(0) > 1 && t.strides()[0] == 0) {
    return t.select(0, 0).to(DType::F32).unsqueeze(0).expand(t.shape());
  }
  return t.to(DType::F32);
}

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  RUCCL_ASSERT(a.dim() == 3 && b.dim() == 3 && out.dim() == 3 && out.is_contiguous());
  RUCCL_ASSERT(a.dtype() == out.dtype() && b.dtype() == out.dtype());
  switch (out.dtype()) {
    case DType::F32:
      return matmul_typed<float>(a, b, out);
    case DType::F64:
      return matmul_typed<double>(a, b, out);
    case DType::F16:
    case DType::BF16: {  // storage types: compute in F32, round once at the end
      const Tensor result = Tensor::empty(out.shape(), DType::F32);
      matmul_typed<float>(to_f32(a), to_f32(b), result);
      copy(result, out);
      return;
    }
    default:
      throw DTypeError(str("cpu::matmul: expected a floating dtype, got ", out.dtype()));
  }
}

void set_num_threads(int n) {
  RUCCL_CHECK(n >= 1, ValueError, "cpu::set_num_threads: expected at least 1 thread, got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
}

int num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace ruccl::cpu
