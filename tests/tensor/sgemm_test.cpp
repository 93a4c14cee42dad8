// cpu::sgemm, the AVX-512 float GEMM under matmul: every tile edge (12 x 32 micro-tiles, 256-deep
// blocks, K super-blocks), every operand layout, and the thread splits, against a float64
// reference with the classic error bound |c - c*| <= k * eps * sum_k |a_ik b_kj|.
#include <catch2/catch.hpp>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/backend/cpu/cpu_sgemm.h"
#include "tensor/core/error.h"

namespace {

using ruccl::cpu::MatrixRef;

/// A rows x cols float matrix stored in `storage` in one of three layouts.
enum class Layout { RowMajor, ColMajor, Strided };

struct Stored {
  std::vector<float> storage;
  MatrixRef ref;
};

Stored store(const std::vector<double>& values, std::int64_t rows, std::int64_t cols,
             Layout layout) {
  Stored s;
  std::int64_t rs = cols;
  std::int64_t cs = 1;
  if (layout == Layout::ColMajor) {
    rs = 1;
    cs = rows;
  } else if (layout == Layout::Strided) {  // every other column of a row-major matrix twice as wide
    rs = 2 * cols + 1;
    cs = 2;
  }
  s.storage.assign(static_cast<std::size_t>(std::max<std::int64_t>(rows * rs + cols * cs, 1)),
                   -7.0f);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      s.storage[static_cast<std::size_t>(i * rs + j * cs)] =
          static_cast<float>(values[static_cast<std::size_t>(i * cols + j)]);
    }
  }
  s.ref = {s.storage.data(), rs, cs};
  return s;
}

/// Deterministic values in [-1, 1) with a few exact zeros.
std::vector<double> values(std::int64_t count, std::uint32_t seed) {
  std::vector<double> v(static_cast<std::size_t>(count));
  std::uint32_t x = seed * 2654435761u + 1;
  for (double& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<double>(static_cast<float>((x >> 8) % 4096) / 2048.0f - 1.0f);
  }
  return v;
}

/// A product's inputs and its float64 reference, computed once per shape.
struct Case {
  std::int64_t m, n, k;
  std::vector<double> a, b, exact, magnitude;  // magnitude: sum_k |a_ik b_kj|
};

Case make_case(std::int64_t m, std::int64_t n, std::int64_t k) {
  Case c{m,
         n,
         k,
         values(m * k, static_cast<std::uint32_t>(m + 3 * k)),
         values(k * n, static_cast<std::uint32_t>(n + 5 * k)),
         {},
         {}};
  c.exact.assign(static_cast<std::size_t>(m * n), 0.0);
  c.magnitude.assign(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t p = 0; p < k; ++p) {
      const double a = c.a[static_cast<std::size_t>(i * k + p)];
      for (std::int64_t j = 0; j < n; ++j) {
        const double prod = a * c.b[static_cast<std::size_t>(p * n + j)];
        c.exact[static_cast<std::size_t>(i * n + j)] += prod;
        c.magnitude[static_cast<std::size_t>(i * n + j)] += std::fabs(prod);
      }
    }
  }
  return c;
}

/// Runs sgemm into a row-major C with two extra columns (a sentinel that must stay untouched) and
/// checks every element against the reference. Returns C.
std::vector<float> check_product(const Case& cs, Layout la, Layout lb, int threads) {
  const std::int64_t m = cs.m, n = cs.n, k = cs.k;
  INFO("m=" << m << " n=" << n << " k=" << k << " layouts " << static_cast<int>(la) << ","
            << static_cast<int>(lb) << " threads=" << threads);
  const Stored a = store(cs.a, m, k, la);
  const Stored b = store(cs.b, k, n, lb);
  const std::int64_t ldc = n + 2;
  constexpr float kSentinel = 12345.0f;
  std::vector<float> c(static_cast<std::size_t>(m * ldc), kSentinel);
  ruccl::cpu::sgemm(m, n, k, a.ref, b.ref, c.data(), ldc, threads);
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * n + j);
      const double got = c[static_cast<std::size_t>(i * ldc + j)];
      const double bound = static_cast<double>(k) * FLT_EPSILON * cs.magnitude[at];
      if (!(std::fabs(got - cs.exact[at]) <= bound) && bad++ == 0) {
        FAIL_CHECK("C[" << i << ", " << j << "] = " << got << ", expected " << cs.exact[at]);
      }
    }
    for (std::int64_t j = n; j < ldc; ++j) {
      if (c[static_cast<std::size_t>(i * ldc + j)] != kSentinel && bad++ == 0) {
        FAIL_CHECK("C[" << i << ", " << j << "] beyond n was written");
      }
    }
  }
  CHECK(bad == 0);
  return c;
}

/// The CPU flags Linux reports (the first "flags" line of /proc/cpuinfo; the kernel leaves out
/// AVX-512 when the OS does not save its registers), or an empty set where there is none.
std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

}  // namespace

TEST_CASE("sgemm is available exactly where the CPU has AVX-512, whatever -march the build used",
          "[tensor]") {
  const std::set<std::string> flags = cpu_flags();
  if (flags.empty()) {
    WARN("no /proc/cpuinfo flags here: nothing to compare cpu::sgemm_available() with");
    return;
  }
  bool has_avx512 = true;
  for (const char* flag : {"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"}) {
    has_avx512 = has_avx512 && flags.count(flag) == 1;
  }
#if defined(__x86_64__)
  CHECK(ruccl::cpu::sgemm_available() == has_avx512);
#else
  CHECK_FALSE(ruccl::cpu::sgemm_available());
#endif
}

TEST_CASE("sgemm matches a float64 reference at every tile edge, layout and thread split",
          "[tensor]") {
  if (!ruccl::cpu::sgemm_available()) {
    std::vector<float> c(1);
    const float one = 1.0f;
    REQUIRE_THROWS_AS(ruccl::cpu::sgemm(1, 1, 1, {&one, 1, 1}, {&one, 1, 1}, c.data(), 1, 1),
                      ruccl::NotImplementedError);
    return;
  }
  // Shapes around the 12 x 32 micro-tile, the 576-row A block and the 256-deep B block; the last
  // two are large enough for the thread split: [230, 150] by rows on 2 and 3 threads; [36, 400]
  // (3 tile rows, 13 panels) by column panels on 2 threads and by rows on 3.
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {1, 1, 1},     {1, 33, 5},    {12, 32, 256},   {13, 33, 257}, {11, 31, 255},
      {25, 65, 513}, {589, 40, 17}, {230, 150, 300}, {36, 400, 280}};
  for (const auto& [m, n, k] : shapes) {
    const Case cs = make_case(m, n, k);
    for (const Layout la : {Layout::RowMajor, Layout::ColMajor, Layout::Strided}) {
      for (const Layout lb : {Layout::RowMajor, Layout::ColMajor, Layout::Strided}) {
        const std::vector<float> one = check_product(cs, la, lb, 1);
        // The thread count never changes a bit of the result.
        for (const int threads : {2, 3}) {
          CHECK(check_product(cs, la, lb, threads) == one);
        }
      }
    }
  }
}

TEST_CASE("sgemm walks a K too deep for one packed B in super-blocks", "[tensor]") {
  if (!ruccl::cpu::sgemm_available()) return;  // the reference test checks the refusal
  // 4100 columns pad to 4128; the packed B holds 4M floats, so 768 rows of K (three blocks) per
  // super-block: K = 800 takes two, the second accumulating onto the first.
  // Five rows split by column panels on 2 threads, 24 rows (two tile rows) by rows: then each
  // super-block's panels are packed by one thread and read by both.
  for (const std::int64_t m : {5, 24}) {
    const Case cs = make_case(m, 4100, 800);
    const std::vector<float> one = check_product(cs, Layout::RowMajor, Layout::ColMajor, 1);
    CHECK(check_product(cs, Layout::RowMajor, Layout::RowMajor, 2) == one);
  }
}

TEST_CASE("sgemm runs more than 16384 columns as column blocks", "[tensor]") {
  if (!ruccl::cpu::sgemm_available()) return;
  // One 256-deep block of B would hold 16400 x 256 floats, over the 4M-float packed-B cap.
  const Case cs = make_case(3, 16400, 5);
  const std::vector<float> one = check_product(cs, Layout::RowMajor, Layout::RowMajor, 1);
  CHECK(check_product(cs, Layout::ColMajor, Layout::ColMajor, 2) == one);
}

TEST_CASE("sgemm takes a thread count below 1 as 1", "[tensor]") {
  if (!ruccl::cpu::sgemm_available()) return;
  const Case cs = make_case(100, 700, 100);  // above the parallel threshold
  CHECK(check_product(cs, Layout::RowMajor, Layout::RowMajor, 0) ==
        check_product(cs, Layout::RowMajor, Layout::RowMajor, 1));
}

TEST_CASE("sgemm with an empty depth writes zeros, and empty outputs touch nothing", "[tensor]") {
  if (!ruccl::cpu::sgemm_available()) return;
  const float unused = 1.0f;
  std::vector<float> c(3 * 5, 9.0f);
  ruccl::cpu::sgemm(3, 4, 0, {&unused, 0, 1}, {&unused, 4, 1}, c.data(), 5, 2);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j)
      CHECK(c[static_cast<std::size_t>(i * 5 + j)] == (j < 4 ? 0.0f : 9.0f));
  }
  ruccl::cpu::sgemm(0, 4, 3, {&unused, 3, 1}, {&unused, 4, 1}, c.data(), 5, 2);
  ruccl::cpu::sgemm(3, 0, 3, {&unused, 3, 1}, {&unused, 0, 1}, c.data(), 5, 2);
  CHECK(c[4] == 9.0f);
}
