// collectives_mpi: the OpenMPI peer of bench/tcp_collective_bench (run over TCP there, any btl
// works). MPI_Allreduce (in place), MPI_Allgather, MPI_Reduce_scatter_block and MPI_Bcast (root
// 0), SUM, float32, with the benchmark's protocol: per iteration the buffer is refilled
// (untimed), every rank passes MPI_Barrier, then times one collective; an iteration's time is the
// maximum over the ranks; the median over iterations is reported (and the minimum). Sizes follow
// nccl-tests: all_reduce and broadcast move SIZE bytes per rank, all_gather's output and
// reduce_scatter's input are SIZE bytes (SIZE / np per rank the other way).
//
// Build: mpicc -O2 bench/peers/collectives_mpi.c -o collectives_mpi          (libopenmpi-dev)
// Run:   mpirun -np N --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
//          ./collectives_mpi OPS SIZES [ITER_DIV]
//   OPS: comma list of all_reduce,all_gather,reduce_scatter,broadcast; SIZES: comma list of
//   bytes (multiples of 4 * np); ITER_DIV divides the iteration counts (1: 400/200/50/15/8 for
//   <= 16 KiB / 256 KiB / 4 MiB / 16 MiB / more; at least 3).
// Output (rank 0): "# ..." comments, then per op and size
//   "R <op> <bytes> <iters> <median_us> <min_us>"   (the format every tcp_collective_bench peer
//   prints; tcp_collective_bench parses it).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxIters = 400, kMaxSizes = 32 };

static int by_value(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

static int iters_for(size_t bytes, int div) {
  int n = bytes <= (16u << 10) ? 400 : bytes <= (256u << 10) ? 200 : bytes <= (4u << 20) ? 50
          : bytes <= (16u << 20) ? 15 : 8;
  n /= div > 0 ? div : 1;
  return n < 3 ? 3 : n;
}

// One collective of `bytes` (nccl-tests meaning) on buffers `a` (input / in place) and `b`.
static void run_op(const char* op, size_t bytes, int world, float* a, float* b) {
  const int count = (int)(bytes / sizeof(float));
  if (!strcmp(op, "all_reduce")) {
    MPI_Allreduce(MPI_IN_PLACE, a, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (!strcmp(op, "all_gather")) {
    MPI_Allgather(a, count / world, MPI_FLOAT, b, count / world, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (!strcmp(op, "reduce_scatter")) {
    MPI_Reduce_scatter_block(a, b, count / world, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Bcast(a, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
}

// The first element every rank must hold after `op` (inputs are rank + 1): a check, not timed.
static float expected(const char* op, int world, int rank) {
  if (!strcmp(op, "all_reduce") || !strcmp(op, "reduce_scatter"))
    return (float)(world * (world + 1) / 2);
  (void)rank;
  return 1.0f;  // all_gather's first block is rank 0's; broadcast's root is rank 0
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: collectives_mpi OPS SIZES [ITER_DIV]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int div = argc > 3 ? atoi(argv[3]) : 1;
  size_t sizes[kMaxSizes];
  int nsizes = 0;
  size_t max_bytes = 0;
  for (char* s = strtok(argv[2], ","); s != NULL && nsizes < kMaxSizes; s = strtok(NULL, ",")) {
    sizes[nsizes] = (size_t)strtoull(s, NULL, 10);
    if (sizes[nsizes] > max_bytes) max_bytes = sizes[nsizes];
    ++nsizes;
  }
  float* a = malloc(max_bytes);
  float* b = malloc(max_bytes);
  double mine[kMaxIters], slowest[kMaxIters];
  if (a == NULL || b == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0) printf("# OpenMPI collectives, SUM, float32, np=%d\n", world);
  char* ops = strdup(argv[1]);
  char* save = NULL;
  for (char* op = strtok_r(ops, ",", &save); op != NULL; op = strtok_r(NULL, ",", &save)) {
    for (int s = 0; s < nsizes; ++s) {
      const size_t count = sizes[s] / sizeof(float);
      const int iters = iters_for(sizes[s], div);
      const int warmup = iters / 8 > 2 ? iters / 8 : 2;
      for (int it = -warmup; it < iters; ++it) {
        for (size_t i = 0; i < count; ++i) a[i] = (float)(rank + 1);  // untimed reset
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        run_op(op, sizes[s], world, a, b);
        if (it >= 0) mine[it] = MPI_Wtime() - t0;
      }
      const float* result = !strcmp(op, "all_reduce") || !strcmp(op, "broadcast") ? a : b;
      if (result[0] != expected(op, world, rank)) {
        fprintf(stderr, "collectives_mpi: %s %zu: rank %d got %g, expected %g\n", op, sizes[s],
                rank, (double)result[0], (double)expected(op, world, rank));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      MPI_Reduce(mine, slowest, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        qsort(slowest, (size_t)iters, sizeof(double), by_value);
        printf("R %s %zu %d %.2f %.2f\n", op, sizes[s], iters, slowest[iters / 2] * 1e6,
               slowest[0] * 1e6);
        fflush(stdout);
      }
    }
  }
  free(ops);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
