// allreduce_mpi: the OpenMPI peer of bench/collective_bench. MPI_Allreduce (in place, SUM,
// float32) with collective_bench's protocol: per iteration the buffer is refilled (untimed), every
// rank passes MPI_Barrier, then times one MPI_Allreduce; an iteration's time is the maximum over
// the ranks and the median over iterations is reported (and the minimum). algbw = bytes / time,
// busbw = algbw * 2 (n - 1) / n, GB = 1e9 bytes (the nccl-tests convention).
//
// Build: mpicc -O2 bench/peers/allreduce_mpi.c -o allreduce_mpi        (libopenmpi-dev)
// Run:   mpirun -np 2 --mca pml ob1 --mca btl vader,self ./allreduce_mpi   (see run_allreduce_mpi.sh)
// Output: "# MPI_Allreduce ..." then "<bytes> <count> <iters> <median_us> <min_us> <algbw> <busbw>"
// per size, 4 KiB .. 64 MiB (the sizes of collective_bench).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  enum { kSizes = 8, kMaxIters = 400 };
  const size_t sizes[kSizes] = {4u << 10, 16u << 10, 64u << 10, 256u << 10,
                                1u << 20, 4u << 20,  16u << 20, 64u << 20};
  const int iters[kSizes] = {400, 400, 200, 100, 50, 20, 15, 8};
  const size_t max_count = sizes[kSizes - 1] / sizeof(float);
  float* buffer = malloc(max_count * sizeof(float));
  double mine[kMaxIters], slowest[kMaxIters];
  if (buffer == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0) printf("# MPI_Allreduce in place, SUM, float32, np=%d\n", world);
  for (int s = 0; s < kSizes; ++s) {
    const int count = (int)(sizes[s] / sizeof(float));
    for (int it = -3; it < iters[s]; ++it) {  // three untimed warm-up iterations
      for (int i = 0; i < count; ++i) buffer[i] = 1.0f;  // bounded values
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buffer, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (it >= 0) mine[it] = MPI_Wtime() - t0;
    }
    MPI_Reduce(mine, slowest, iters[s], MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      qsort(slowest, (size_t)iters[s], sizeof(double), by_value);
      const double median = slowest[iters[s] / 2];
      const double algbw = (double)sizes[s] / median / 1e9;
      printf("%zu %d %d %.1f %.1f %.3f %.3f\n", sizes[s], count, iters[s], median * 1e6,
             slowest[0] * 1e6, algbw, algbw * 2.0 * (world - 1) / world);
      fflush(stdout);
    }
  }
  free(buffer);
  MPI_Finalize();
  return 0;
}
