// ruCCL's float32 GEMM for AVX-512 (see cpu_sgemm.h), written after the GotoBLAS/BLIS design:
//
//   for each block of at most 16384 columns of B and C, and each K super-block of it (the packed
//   B holds at most kPackedBCap floats):
//     per thread, over its band of C's rows (or of its column panels):
//       for each mc-row block, for each kc block:
//         pack A[ic:ic+mc, pc:pc+kc] into 12-row panels                    (L2-resident, private)
//         for each 32-column panel of B (kc x 32, L1-resident):
//           on first use by any thread, pack it                             (shared by threads)
//           for each 12-row panel of A: micro-kernel C[12, 32] (+)= A_panel * B_panel
//
// Why not Eigen's GEMM for float: its AVX-512 kernel is 48 x 4 (three vectors of the streamed
// operand per k step feed only four columns), so it needs 16 bytes from L2 per FMA; this 12 x 32
// tile keeps 24 accumulators in registers and loads 2 vectors + 12 broadcasts per 24 FMAs, the
// streamed A panel costing about 2 bytes per FMA. And the threads share one packed B instead of
// each packing all of it (docs/performance-history.md, "The GEMM kernel").
//
// Every C element sums its products in k order, block by block, whatever the thread split: the
// result does not depend on the thread count.
//
// Run-time dispatch: every function of the kernel below carries RUCCL_AVX512, a target attribute,
// so this file compiles the AVX-512 code whatever -march the build uses, and only these functions
// contain it (the templates and inline functions of the headers are instantiated for the build's
// target, so no AVX-512 copy of them can be picked by the linker for another translation unit).
// The public cpu::sgemm enters the kernel only after sgemm_available() has asked the CPU.
#include "tensor/backend/cpu/cpu_sgemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/backend/cpu/thread_buffer.h"
#include "tensor/core/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RUCCL_SGEMM_KERNEL 1
#include <immintrin.h>
// The instruction sets the kernel is compiled for; sgemm_available() checks the same list.
#define RUCCL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#define RUCCL_CPU_PAUSE() _mm_pause()
#else
#define RUCCL_SGEMM_KERNEL 0
#endif

namespace ruccl::cpu {

namespace {

/// Whether the CPU runs the kernel: __builtin_cpu_supports also checks that the OS saves the
/// AVX-512 registers (XCR0), not only the CPUID bits.
bool cpu_runs_kernel() {
#if RUCCL_SGEMM_KERNEL
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace

bool sgemm_available() {
  static const bool available = cpu_runs_kernel();
  return available;
}

#if RUCCL_SGEMM_KERNEL

namespace {

constexpr std::int64_t kMr = 12;   // rows of the micro-tile (12 x 2 accumulators of 16 floats)
constexpr std::int64_t kNr = 32;   // columns of the micro-tile: two AVX-512 vectors
constexpr std::int64_t kKc = 256;  // depth of a block: a B panel is 32 KiB (L1 is 32-48 KiB)
// Rows of a packed A block: 576 KiB, L2-resident (L2 is 1 MiB). Each B panel loaded into L1 serves
// 48 micro-tiles; 192 rows ran 4-6 % slower on 2 threads (interleaved runs:
// docs/performance-history.md).
constexpr std::int64_t kMc = 576;
/// Largest packed B (floats: 16 MiB, kept per calling thread, as OpenBLAS keeps a buffer per
/// thread): beyond it K is walked in super-blocks, each a parallel region of its own, and more
/// than 16384 columns in column blocks. A 4 MiB cap cost 2.5 % at n = 2048 on 2 threads (four
/// regions, four joins).
constexpr std::int64_t kPackedBCap = std::int64_t{4} << 20;
/// Below this many multiply-adds a product runs on one thread.
constexpr std::int64_t kParallelMinMacs = std::int64_t{1} << 21;

/// thread_buffer slots of the packed B (the calling thread's) and packed A (each computing
/// thread's); cpu_matmul.cpp's Eigen path uses slot 0.
constexpr int kPackedBSlot = 1;
constexpr int kPackedASlot = 2;

/// Transposes the 8 x 8 block in r[0..7] (r[i][j] becomes r[j][i]).
RUCCL_AVX512 inline void transpose8x8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/// dst[k * width + i] = src[i * stride + k] for lanes i < count and k < kc, zeros in the lanes up
/// to width: lanes that each run contiguously along k (the rows of a row-major A, the columns of a
/// column-major B), transposed in 8 x 8 blocks (4 x 4 for a last group of 4 lanes).
RUCCL_AVX512 void pack_transposed(const float* src, std::int64_t stride, std::int64_t count,
                                  std::int64_t kc, std::int64_t width, float* dst) {
  const std::int64_t lanes8 = count / 8 * 8;
  const std::int64_t lanes4 = count / 4 * 4;
  const std::int64_t blocked_k = kc / 8 * 8;
  for (std::int64_t k = 0; k < blocked_k; k += 8) {
    for (std::int64_t g = 0; g < lanes8; g += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (g + i) * stride + k);
      transpose8x8(r);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (k + j) * width + g, r[j]);
    }
    if (lanes4 > lanes8) {
      for (std::int64_t h = k; h < k + 8; h += 4) {
        const float* s = src + lanes8 * stride + h;
        __m128 r0 = _mm_loadu_ps(s);
        __m128 r1 = _mm_loadu_ps(s + stride);
        __m128 r2 = _mm_loadu_ps(s + 2 * stride);
        __m128 r3 = _mm_loadu_ps(s + 3 * stride);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(dst + h * width + lanes8, r0);
        _mm_storeu_ps(dst + (h + 1) * width + lanes8, r1);
        _mm_storeu_ps(dst + (h + 2) * width + lanes8, r2);
        _mm_storeu_ps(dst + (h + 3) * width + lanes8, r3);
      }
    }
  }
  for (std::int64_t k = 0; k < kc; ++k) {  // what the blocks left: the last k, the last lanes
    for (std::int64_t i = k < blocked_k ? lanes4 : 0; i < count; ++i) {
      dst[k * width + i] = src[i * stride + k];
    }
    for (std::int64_t i = count; i < width; ++i) dst[k * width + i] = 0.0f;
  }
}

/// dst[k * width + i] = src[k * k_stride + i * lane_stride] for i < count, zeros up to width: the
/// general gather (also a column-major A, whose lanes are contiguous for each k).
RUCCL_AVX512 void pack_strided(const float* src, std::int64_t k_stride, std::int64_t lane_stride,
                               std::int64_t count, std::int64_t kc, std::int64_t width,
                               float* dst) {
  for (std::int64_t k = 0; k < kc; ++k) {
    const float* s = src + k * k_stride;
    for (std::int64_t i = 0; i < count; ++i) dst[k * width + i] = s[i * lane_stride];
    for (std::int64_t i = count; i < width; ++i) dst[k * width + i] = 0.0f;
  }
}

/// Packs rows [i0, i0 + mc) x depth [p0, p0 + kc) of A as 12-row panels: panel r holds, for each
/// k, its 12 rows' values contiguously (rows past the matrix are zeros).
RUCCL_AVX512 void pack_a(const MatrixRef& a, std::int64_t m, std::int64_t i0, std::int64_t mc,
                         std::int64_t p0, std::int64_t kc, float* dst) {
  for (std::int64_t ir = 0; ir < mc; ir += kMr) {
    const std::int64_t rows = std::min(kMr, m - i0 - ir);
    const float* base = a.data + (i0 + ir) * a.row_stride + p0 * a.col_stride;
    if (a.col_stride == 1) {
      pack_transposed(base, a.row_stride, rows, kc, kMr, dst + ir * kc);
    } else {
      pack_strided(base, a.col_stride, a.row_stride, rows, kc, kMr, dst + ir * kc);
    }
  }
}

/// Packs depth [p0, p0 + kc) x columns [j0, j0 + 32) of B as one panel: for each k, 32 columns
/// contiguously (columns past the matrix are zeros).
RUCCL_AVX512 void pack_b(const MatrixRef& b, std::int64_t n, std::int64_t p0, std::int64_t kc,
                         std::int64_t j0, float* dst) {
  const std::int64_t cols = std::min(kNr, n - j0);
  const float* base = b.data + p0 * b.row_stride + j0 * b.col_stride;
  if (cols == kNr && b.col_stride == 1) {  // row-major B: a plain copy of each row's 32 floats
    for (std::int64_t k = 0; k < kc; ++k) {
      const float* s = base + k * b.row_stride;
      if (k + 8 < kc) {  // rows lie b.row_stride apart (often pages apart): fetch 8 rows ahead
        _mm_prefetch(reinterpret_cast<const char*>(s + 8 * b.row_stride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(s + 8 * b.row_stride + 31), _MM_HINT_T0);
      }
      _mm512_store_ps(dst + k * kNr, _mm512_loadu_ps(s));
      _mm512_store_ps(dst + k * kNr + 16, _mm512_loadu_ps(s + 16));
    }
  } else if (b.row_stride == 1) {  // column-major B (x @ W^T): W's rows are the lanes
    pack_transposed(base, b.col_stride, cols, kc, kNr, dst);
  } else {
    pack_strided(base, b.row_stride, b.col_stride, cols, kc, kNr, dst);
  }
}

/// C[12, 32] (leading dimension ldc) = (C +) A_panel * B_panel over kc steps.
template <bool kAccumulate>
RUCCL_AVX512 void micro_kernel(std::int64_t kc, const float* a, const float* b, float* c,
                               std::int64_t ldc) {
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = _mm512_setzero_ps();
    acc[i][1] = _mm512_setzero_ps();
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 31), _MM_HINT_T0);
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += kNr;
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    float* row = c + i * ldc;
    if (kAccumulate) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(row));
      acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(row + 16));
    }
    _mm512_storeu_ps(row, acc[i][0]);
    _mm512_storeu_ps(row + 16, acc[i][1]);
  }
}

using PanelState = std::atomic<std::uint8_t>;
constexpr std::uint8_t kUnpacked = 0;
constexpr std::uint8_t kPacking = 1;
constexpr std::uint8_t kPacked = 2;

/// One micro-tile of C with `rows` x `cols` valid entries (a full tile runs in place; an edge tile
/// goes through a local buffer).
RUCCL_AVX512 void tile(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                       std::int64_t rows, std::int64_t cols, bool accumulate) {
  if (rows == kMr && cols == kNr) {
    if (accumulate) {
      micro_kernel<true>(kc, a, b, c, ldc);
    } else {
      micro_kernel<false>(kc, a, b, c, ldc);
    }
    return;
  }
  alignas(64) float local[kMr * kNr];
  micro_kernel<false>(kc, a, b, local, kNr);
  for (std::int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    const float* src = local + i * kNr;
    for (std::int64_t j = 0; j < cols; ++j) row[j] = accumulate ? row[j] + src[j] : src[j];
  }
}

/// The product's shape and operands, and its packed B for the current K super-block.
struct Problem {
  std::int64_t m, n, k;
  MatrixRef a, b;
  float* c;
  std::int64_t ldc;
  std::int64_t panels;  // 32-column panels of B and C
  std::int64_t k0, kk;  // the K super-block: depth [k0, k0 + kk)
  float* packed_b;      // kk x (32 * panels), block p (kc rows) at p * 32 * panels
  PanelState* state;    // per (kc block, panel) of the super-block, row-major
};

/// Panel q of K block p of the packed B, packed by whichever thread asks first. Packing on first
/// use keeps the panel in L1 for the micro-kernels that follow; a thread that finds the panel
/// being packed by another waits for it (a claimed panel is always being packed, so no thread
/// ever waits on a thread that waits).
RUCCL_AVX512 const float* packed_panel(const Problem& pr, std::int64_t p, std::int64_t q,
                                       std::int64_t kc) {
  float* panel = pr.packed_b + p * kNr * pr.panels + q * kNr * kc;
  PanelState& state = pr.state[(p / kKc) * pr.panels + q];
  std::uint8_t seen = state.load(std::memory_order_acquire);
  if (seen == kPacked) return panel;
  if (seen == kUnpacked &&
      state.compare_exchange_strong(seen, kPacking, std::memory_order_acquire)) {
    pack_b(pr.b, pr.n, pr.k0 + p, kc, q * kNr, panel);
    state.store(kPacked, std::memory_order_release);
    return panel;
  }
  while (state.load(std::memory_order_acquire) != kPacked) RUCCL_CPU_PAUSE();
  return panel;
}

/// C[rows r0:r1, panels q0:q1] (+)= A[r0:r1, k0:k0+kk] * B, on the calling thread. The panels are
/// walked from q0 + rotate (cyclically), so that threads sharing B start by packing different
/// panels.
RUCCL_AVX512 void compute_block(const Problem& pr, std::int64_t r0, std::int64_t r1,
                                std::int64_t q0, std::int64_t q1, std::int64_t rotate) {
  float* packed_a = thread_buffer<float, kPackedASlot>(static_cast<std::size_t>(kMc * kKc));
  const std::int64_t count = q1 - q0;
  for (std::int64_t ic = r0; ic < r1; ic += kMc) {
    const std::int64_t mc = std::min(kMc, r1 - ic);
    for (std::int64_t p = 0; p < pr.kk; p += kKc) {
      const std::int64_t kc = std::min(kKc, pr.kk - p);
      const bool accumulate = pr.k0 + p > 0;
      pack_a(pr.a, pr.m, ic, mc, pr.k0 + p, kc, packed_a);
      for (std::int64_t step = 0; step < count; ++step) {
        const std::int64_t q = q0 + (step + rotate) % count;
        const float* panel_b = packed_panel(pr, p, q, kc);
        const std::int64_t cols = std::min(kNr, pr.n - q * kNr);
        for (std::int64_t ir = 0; ir < mc; ir += kMr) {
          tile(kc, packed_a + ir * kc, panel_b, pr.c + (ic + ir) * pr.ldc + q * kNr, pr.ldc,
               std::min(kMr, r1 - ic - ir), cols, accumulate);
        }
      }
    }
  }
}

/// cpu::sgemm once sgemm_available() said yes.
RUCCL_AVX512 void sgemm_avx512(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a,
                               MatrixRef b, float* c, std::int64_t ldc, int threads) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  // One block of B's depth is kKc x n: beyond kMaxColumns columns it would outgrow the packed-B
  // cap, so wider products run as column blocks of C and B, one after another.
  constexpr std::int64_t kMaxColumns = kPackedBCap / kKc / kNr * kNr;
  if (n > kMaxColumns) {
    for (std::int64_t j = 0; j < n; j += kMaxColumns) {
      const MatrixRef b_block{b.data + j * b.col_stride, b.row_stride, b.col_stride};
      sgemm_avx512(m, std::min(kMaxColumns, n - j), k, a, b_block, c + j, ldc, threads);
    }
    return;
  }
  const std::int64_t panels = (n + kNr - 1) / kNr;
  if (threads < 1 || m * n * k < kParallelMinMacs) threads = 1;
  // The threads' share of C: bands of whole micro-tile rows, or of column panels when that
  // balances the work better (few rows, e.g. a batch of 128 split 72 + 56) - then each thread
  // packs its own panels of B and all of A.
  const std::int64_t tile_rows = (m + kMr - 1) / kMr;
  const auto share = [threads](std::int64_t units) {  // largest share of `units` over threads
    return static_cast<double>((units + threads - 1) / threads) / static_cast<double>(units);
  };
  const bool split_rows = share(tile_rows) <= share(panels) + 0.02;
  const std::int64_t units = split_rows ? tile_rows : panels;
  const std::int64_t band = (units + threads - 1) / threads;  // in tile rows or panels
  const std::int64_t tasks = (units + band - 1) / band;
  const std::int64_t super_k = std::max(kKc, kPackedBCap / (panels * kNr) / kKc * kKc);
  const std::int64_t blocks = (std::min(k, super_k) + kKc - 1) / kKc;
  Problem pr{m, n, k, a, b, c, ldc, panels, 0, 0, nullptr, nullptr};
  pr.packed_b = thread_buffer<float, kPackedBSlot>(
      static_cast<std::size_t>(std::min(k, super_k) * panels * kNr));
  const std::unique_ptr<PanelState[]> state(new PanelState[blocks * panels]);
  pr.state = state.get();
  for (pr.k0 = 0; pr.k0 < k; pr.k0 += super_k) {
    pr.kk = std::min(super_k, k - pr.k0);
    for (std::int64_t i = 0; i < blocks * panels; ++i) {
      state[i].store(kUnpacked, std::memory_order_relaxed);
    }
    const auto compute = [&](std::int64_t t) {
      const std::int64_t first = t * band;
      const std::int64_t last = std::min(units, first + band);
      if (split_rows) {  // all panels, walked from a different one per thread
        compute_block(pr, first * kMr, std::min(m, last * kMr), 0, panels, t * panels / tasks);
      } else {
        compute_block(pr, 0, m, first, last, 0);
      }
    };
    parallel_for(tasks, static_cast<int>(std::min<std::int64_t>(threads, tasks)), compute);
  }
}

}  // namespace

#endif  // RUCCL_SGEMM_KERNEL

void sgemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b, float* c,
           std::int64_t ldc, int threads) {
  RUCCL_CHECK(sgemm_available(), NotImplementedError,
              "not implemented: cpu::sgemm needs an x86-64 CPU with AVX-512 F, BW, DQ, VL and "
              "FMA (cpu::sgemm_available() is false here)");
#if RUCCL_SGEMM_KERNEL
  sgemm_avx512(m, n, k, a, b, c, ldc, threads);
#else
  static_cast<void>(m), static_cast<void>(n), static_cast<void>(k), static_cast<void>(a);
  static_cast<void>(b), static_cast<void>(c), static_cast<void>(ldc), static_cast<void>(threads);
#endif
}

}  // namespace ruccl::cpu
