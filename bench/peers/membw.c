// membw: the memory-bandwidth floor of bench/collective_bench. The rate of a[i] += b[i] over two
// float32 arrays of MIB MiB each on the OpenMP threads, STREAM-counted (3 x 4 bytes per element:
// two reads and a write), median and best of REPS runs, GB = 1e9 bytes. An in-process all-reduce
// must read every rank's input and write every output, so this rate bounds it from below.
//
// Build: gcc -O3 -march=native -fopenmp bench/peers/membw.c -o membw
// Run:   OMP_NUM_THREADS=2 OMP_PROC_BIND=true ./membw [MIB, default 64] [REPS, default 10]
// Output: "acc(a+=b) <median GB/s> <best GB/s>" (collective_bench parses it) and the same for a
// copy (memcpy of one slice per thread).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

static float* first_touched(size_t n, float value) {
  float* p = NULL;
  if (posix_memalign((void**)&p, 64, n * sizeof(float)) != 0) return NULL;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) p[i] = value;  // pages land near the threads that use them
  return p;
}

static void accumulate(float* a, const float* b, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

static void copy(float* a, const float* b, size_t n) {
#pragma omp parallel
  {
    const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
    const size_t lo = n * t / nt, hi = n * (t + 1) / nt;
    memcpy(a + lo, b + lo, (hi - lo) * sizeof(float));
  }
}

int main(int argc, char** argv) {
  const double mib = argc > 1 ? atof(argv[1]) : 64.0;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  reps = reps < 1 ? 1 : reps > 100 ? 100 : reps;
  const size_t n = (size_t)(mib * 1024.0 * 1024.0 / sizeof(float));
  float* a = first_touched(n, 0.0f);
  float* b = first_touched(n, 1.0f);
  if (a == NULL || b == NULL) {
    fprintf(stderr, "membw: out of memory\n");
    return 1;
  }
  printf("# membw threads=%d MiB/array=%.1f reps=%d\n", omp_get_max_threads(), mib, reps);
  for (int kernel = 0; kernel < 2; ++kernel) {
    double times[100];
    for (int r = -1; r < reps; ++r) {  // one untimed warm-up run
      const double t0 = seconds();
      if (kernel == 0) {
        accumulate(a, b, n);
      } else {
        copy(a, b, n);
      }
      if (r >= 0) times[r] = seconds() - t0;
    }
    qsort(times, (size_t)reps, sizeof(double), by_value);
    const double bytes = (kernel == 0 ? 3.0 : 2.0) * (double)n * sizeof(float);
    printf("%s %.2f %.2f\n", kernel == 0 ? "acc(a+=b)" : "copy", bytes / times[reps / 2] / 1e9,
           bytes / times[0] / 1e9);
  }
  free(a);
  free(b);
  return 0;
}
