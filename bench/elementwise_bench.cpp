// elementwise_bench: memory bandwidth of elementwise add (c = a + b) and of a full sum on 16M
// floats, 1 and 2 threads, beside libc memcpy measured in the same process on the same buffers
// (the peer is that memcpy: no program outside this one is needed). Also the per-call cost of tiny
// ops (16 elements), which the autodiff overhead target depends on. And the in-place scalar ops
// (t.mul_(s), t.div_(s): DataParallel's weighting and averaging of a gradient bucket) beside the
// Eigen::Map loop DataParallel used before them, F32 and F64, 1 and 2 threads.
//
// GB/s = 1e9 bytes/s, counted STREAM-style (bytes read + bytes written, no write-allocate):
// memcpy 2 x 64 MiB, add 3 x 64 MiB, sum 1 x 64 MiB. Median of `reps` interleaved runs after a
// warm-up.
//   "add (kernel)"   the backend writing into a preallocated output (what memcpy is compared to);
//   "add (new out)"  ruccl::add, which also allocates its output (fresh pages fault on first
//   write).
// Usage: elementwise_bench [reps] [in-place]   ("in-place": only the in-place table)
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_parallel.h"
#include "tensor/tensor.h"

using namespace ruccl;

namespace {

using Clock = std::chrono::steady_clock;

// libc memcpy split in `threads` equal slices on the CPU backend's thread pool.
void parallel_memcpy(float* dst, const float* src, std::int64_t n, int threads) {
  const std::int64_t chunk = (n + threads - 1) / threads;
  cpu::parallel_for(threads, threads, [&](std::int64_t t) {
    const std::int64_t lo = t * chunk;
    const std::int64_t hi = std::min(n, lo + chunk);
    if (lo < hi) std::memcpy(dst + lo, src + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
  });
}

// CPU time of this thread: on a shared machine the wall clock also counts time spent descheduled.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Median over 9 batches of the thread CPU time per call.
double tiny_op_ns(const std::function<void()>& fn) {
  constexpr int kCalls = 20000;
  std::vector<double> t;
  for (int r = 0; r < 10; ++r) {
    const double start = thread_seconds();
    for (int i = 0; i < kCalls; ++i) fn();
    if (r > 0) t.push_back((thread_seconds() - start) / kCalls * 1e9);  // batch 0 warms up
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// t *= s or t /= s in place the way DataParallel did before Tensor::mul_ / div_: Eigen's
/// explicit SIMD over the contiguous buffer, on the calling thread.
template <typename T>
void eigen_in_place(const Tensor& t, double s, bool divide) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<Array> m(static_cast<T*>(t.data_ptr()), static_cast<Eigen::Index>(t.numel()));
  if (divide) {
    m /= static_cast<T>(s);
  } else {
    m *= static_cast<T>(s);
  }
}

/// The in-place table: GB/s (read + write of the buffer) of t.mul_ / t.div_ against the Eigen loop,
/// median of `reps` interleaved runs, for buffers of 64K, 1M and 16M elements.
void in_place_table(int reps) {
  std::printf("\n## In-place scalar ops: Tensor::mul_ / div_ vs the Eigen::Map loop\n\n");
  std::printf(
      "Median of %d interleaved runs; GB/s = 1e9 B/s of the buffer read + written; ratio = "
      "Eigen's median time / ours (> 1: ours faster). Eigen's loop is single-threaded.\n\n",
      reps);
  std::printf("| op | dtype | elements | threads | ours GB/s | Eigen GB/s | ratio | same bits |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---|\n");
  const int saved = cpu::num_threads();
  for (const DType dtype : {DType::F32, DType::F64}) {
    for (const std::int64_t n :
         {std::int64_t{1} << 16, std::int64_t{1} << 20, std::int64_t{1} << 24}) {
      // Values stay near 1: multiplying by 1.0000001 and dividing by it alternate.
      Tensor t = Tensor::ones({n}, dtype);
      const double bytes = 2.0 * static_cast<double>(t.nbytes());
      // Both ways give the same bits (DataParallel's results did not change with the switch).
      Generator gen(1);
      const Tensor x = Tensor::randn({n}, gen, dtype);
      bool same = true;
      for (const bool divide : {false, true}) {
        Tensor ours = x.clone();
        const Tensor theirs = x.clone();
        if (divide) {
          ours.div_(3.7);
        } else {
          ours.mul_(3.7);
        }
        if (dtype == DType::F32) {
          eigen_in_place<float>(theirs, 3.7, divide);
        } else {
          eigen_in_place<double>(theirs, 3.7, divide);
        }
        same = same && std::memcmp(ours.data_ptr(), theirs.data_ptr(), ours.nbytes()) == 0;
      }
      // Small buffers repeat the op so that one sample is well above the clock's resolution.
      const int inner = static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{1} << 24) / n));
      for (const bool divide : {false, true}) {
        for (int threads : {1, 2}) {
          cpu::set_num_threads(threads);
          std::vector<double> ours;
          std::vector<double> eigen;
          const auto run_ours = [&] {
            const auto start = Clock::now();
            for (int i = 0; i < inner; ++i) {
              if (divide) {
                t.div_(1.0000001);
              } else {
                t.mul_(1.0000001);
              }
            }
            return std::chrono::duration<double>(Clock::now() - start).count() / inner;
          };
          const auto run_eigen = [&] {
            const auto start = Clock::now();
            for (int i = 0; i < inner; ++i) {
              if (dtype == DType::F32) {
                eigen_in_place<float>(t, 1.0000001, divide);
              } else {
                eigen_in_place<double>(t, 1.0000001, divide);
              }
            }
            return std::chrono::duration<double>(Clock::now() - start).count() / inner;
          };
          for (int r = -1; r < reps; ++r) {
            // Which goes first alternates, so neither always finds the other's cache state.
            double a = 0;
            double b = 0;
            if (r % 2 == 0) {
              a = run_ours();
              b = run_eigen();
            } else {
              b = run_eigen();
              a = run_ours();
            }
            if (r >= 0) {  // run -1 warms up
              ours.push_back(a);
              eigen.push_back(b);
            }
          }
          const double o = median_of(ours);
          const double e = median_of(eigen);
          std::printf("| %s | %s | %lld | %d | %.1f | %.1f | %.2f | %s |\n",
                      divide ? "div_" : "mul_", dtype_name(dtype).data(), static_cast<long long>(n),
                      threads, bytes / o / 1e9, bytes / e / 1e9, e / o, same ? "yes" : "NO");
        }
      }
    }
  }
  cpu::set_num_threads(saved);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  if (argc > 2 && std::string(argv[2]) == "in-place") {
    in_place_table(reps);
    return 0;
  }
  const std::int64_t n = std::int64_t{1} << 24;  // 16M floats, 64 MiB per array
  const double bytes = static_cast<double>(n) * sizeof(float);
  const Tensor a = Tensor::full({n}, 0.5);
  const Tensor b = Tensor::full({n}, 0.25);
  const Tensor c = Tensor::zeros({n});
  Backend& cpu_backend = backend_for(Device::cpu());
  const int saved = cpu::num_threads();

  std::printf("## Elementwise and reduction bandwidth, 16M float32 (64 MiB per array)\n\n");
  std::printf(
      "Median (and best) of %d interleaved runs; GB/s = 1e9 B/s of reads + writes (STREAM "
      "counting); ratio = our median / memcpy's median.\n\n",
      reps);
  std::printf("| kernel | threads | ours GB/s | best | memcpy GB/s (same run) | ratio |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  volatile float sink = 0;
  const Tensor square = a.reshape({4096, 4096});
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    struct Kernel {
      const char* name;
      double bytes;
      std::function<void()> run;
      std::vector<double> seconds;
    };
    std::vector<Kernel> kernels = {
        {"memcpy (libc)",
         2 * bytes,
         [&] {
           parallel_memcpy(static_cast<float*>(c.data_ptr()),
                           static_cast<const float*>(a.data_ptr()), n, threads);
         },
         {}},
        {"add c = a + b (kernel)", 3 * bytes, [&] { cpu_backend.binary(Op::Add, a, b, c); }, {}},
        {"add c = a + b (new out)", 3 * bytes, [&] { sink = sink + (a + b).numel(); }, {}},
        {"sum (all 16M)", bytes, [&] { sink = sink + sum(a).item<float>(); }, {}},
        {"sum over dim 0 of [4096, 4096]",
         bytes,
         [&] { sink = sink + sum(square, 0).numel(); },
         {}},
    };
    // Interleaved, so that a change in the machine's load hits every kernel alike.
    for (int r = -1; r < reps; ++r) {
      for (Kernel& k : kernels) {
        const auto start = Clock::now();
        k.run();
        const double t = std::chrono::duration<double>(Clock::now() - start).count();
        if (r >= 0) k.seconds.push_back(t);  // run -1 warms up
      }
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double memcpy_gbs = kernels[0].bytes / median(kernels[0].seconds) / 1e9;
    for (const Kernel& k : kernels) {
      const double gbs = k.bytes / median(k.seconds) / 1e9;
      const double best = k.bytes / *std::min_element(k.seconds.begin(), k.seconds.end()) / 1e9;
      std::printf("| %s | %d | %.1f | %.1f | %.1f | %.2f |\n", k.name, threads, gbs, best,
                  memcpy_gbs, gbs / memcpy_gbs);
    }
  }
  cpu::set_num_threads(saved);

  std::printf("\n## Per-call cost of tiny ops (16 float32), thread CPU time\n\n");
  std::printf("| op | ns per call |\n|---|---:|\n");
  const Tensor x = Tensor::full({16}, 0.5);
  const Tensor y = Tensor::full({16}, 0.25);
  const Tensor xy = Tensor::zeros({16});
  std::printf("| add(x, y) | %.0f |\n", tiny_op_ns([&] { (void)add(x, y); }));
  std::printf("| add(x, 1.0) | %.0f |\n", tiny_op_ns([&] { (void)add(x, 1.0); }));
  std::printf("| mul(x, y) broadcast [16] x [1, 16] | %.0f |\n", tiny_op_ns([&] {
                (void)mul(x, y.reshape({1, 16}));
              }));
  std::printf("| exp(x) | %.0f |\n", tiny_op_ns([&] { (void)exp(x); }));
  std::printf("| sum(x) | %.0f |\n", tiny_op_ns([&] { (void)sum(x); }));
  std::printf("| backend binary(Add) into an existing output | %.0f |\n",
              tiny_op_ns([&] { cpu_backend.binary(Op::Add, x, y, xy); }));
  std::printf("| Tensor::empty({16}) | %.0f |\n", tiny_op_ns([&] { (void)Tensor::empty({16}); }));
  in_place_table(reps);
  return sink == 12345.0f ? 1 : 0;
}
