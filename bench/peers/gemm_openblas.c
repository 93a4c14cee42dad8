// gemm_openblas: the peer of bench/gemm_bench. Float32 GEMM GFLOP/s of OpenBLAS's cblas_sgemm on
// square row-major n x n matrices, with gemm_bench's protocol: one untimed call, then enough
// timed calls for about a second (5..200), median reported (GFLOP/s = 2 n^3 / median time). C is
// reused between calls, as matmul_out reuses its output.
//
// Build: gcc -O2 bench/peers/gemm_openblas.c -o gemm_openblas -lopenblas   (libopenblas-dev)
// Run:   OPENBLAS_CORETYPE=SkylakeX ./gemm_openblas THREADS [n ...]     (default 256 512 1024 2048)
// Output: "# OpenBLAS core=<name> threads=<t>", then "openblas <threads> <n> <median_ms> <GFLOP/s>
// <best GFLOP/s>" per size. gemm_bench builds and runs this itself and parses these lines.
//
// Debian 12's OpenBLAS 0.3.21 does not recognise recent CPUs (e.g. AMD family 25) and silently
// falls back to its SSE3 'Prescott' kernels; OPENBLAS_CORETYPE=SkylakeX selects the AVX-512 ones.
// The core actually used is printed, so a table always says what it compared against.
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

char* openblas_get_corename(void);
void openblas_set_num_threads(int threads);

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

static double timed_sgemm(int n, const float* a, const float* b, float* c) {
  const double t0 = seconds();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  return seconds() - t0;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  static const int default_sizes[] = {256, 512, 1024, 2048};
  const int count = argc > 2 ? argc - 2 : 4;
  openblas_set_num_threads(threads);
  printf("# OpenBLAS core=%s threads=%d\n", openblas_get_corename(), threads);
  for (int s = 0; s < count; ++s) {
    const int n = argc > 2 ? atoi(argv[s + 2]) : default_sizes[s];
    const size_t elements = (size_t)n * (size_t)n;
    float* a = malloc(elements * sizeof(float));
    float* b = malloc(elements * sizeof(float));
    float* c = calloc(elements, sizeof(float));
    if (a == NULL || b == NULL || c == NULL) {
      fprintf(stderr, "gemm_openblas: out of memory at n = %d\n", n);
      return 1;
    }
    unsigned state = 12345u;  // a small LCG: values in [-0.5, 0.5), the same on every run
    for (size_t i = 0; i < elements; ++i) {
      state = state * 1664525u + 1013904223u;
      a[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
      state = state * 1664525u + 1013904223u;
      b[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
    }
    const double first = timed_sgemm(n, a, b, c);
    int reps = (int)(1.0 / first);
    reps = reps < 5 ? 5 : reps > 200 ? 200 : reps;
    double times[200];
    for (int r = 0; r < reps; ++r) times[r] = timed_sgemm(n, a, b, c);
    qsort(times, (size_t)reps, sizeof(double), by_value);
    const double flop = 2.0 * (double)n * (double)n * (double)n;
    printf("openblas %d %d %.3f %.1f %.1f\n", threads, n, times[reps / 2] * 1e3,
           flop / times[reps / 2] / 1e9, flop / times[0] / 1e9);
    fflush(stdout);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
