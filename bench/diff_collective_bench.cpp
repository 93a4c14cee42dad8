// diff_collective_bench: the overhead of the differentiable all_reduce_sum (forward, then
// backward through the tape) over the same two Communicator::all_reduce calls made directly, on
// in-process ranks (default 2), F32, 4 KiB and 16 MiB. Target: under 5% at 16 MiB.
//
//   diff_collective_bench [--reps R] [--ranks W]
//
// One iteration of "plain" is y = all_reduce(x); gx = all_reduce(g). One iteration of
// "differentiable" is y = all_reduce_sum(Var x); y.backward(g) (which runs the same all_reduce on
// g and stores it as x's gradient), then x.zero_grad(). Plain and differentiable repetitions
// alternate (and which runs first alternates too), so that drift in machine load hits both. Two
// figures per variant, medians over the repetitions: wall time per iteration on rank 0, and CPU
// time per iteration summed over the ranks' threads (less sensitive to other processes taking the
// cores; it includes the brief spin of waiting ranks).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "collective/collective.h"
#include "tensor/tensor.h"

using namespace ruccl;
using Clock = std::chrono::steady_clock;
namespace dc = ruccl::autodiff::collective;

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Sample {
  double wall;  // rank 0, seconds per iteration
  double cpu;   // all ranks, seconds per iteration
};

// One timed loop of `iters` iterations of the body make_body(comm) returns (built on each rank's
// thread, warmed up first) on `world` ranks.
template <typename MakeBody>
Sample time_on_ranks(int world, int iters, MakeBody make_body) {
  std::vector<Communicator> comms = InProcessGroup::create(world);
  std::vector<double> cpu(static_cast<std::size_t>(world));
  double wall = 0.0;
  auto rank_main = [&](int r) {
    Communicator& comm = comms[static_cast<std::size_t>(r)];
    auto body = make_body(comm);
    for (int i = 0; i < 3; ++i) body();  // warm-up (allocations, page faults)
    comm.barrier();
    const double c0 = thread_cpu_seconds();
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) body();
    if (r == 0) wall = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
    cpu[static_cast<std::size_t>(r)] = (thread_cpu_seconds() - c0) / iters;
  };
  std::vector<std::thread> others;
  for (int r = 1; r < world; ++r) others.emplace_back(rank_main, r);
  rank_main(0);
  for (std::thread& t : others) t.join();
  double cpu_sum = 0.0;
  for (double c : cpu) cpu_sum += c;
  return {wall, cpu_sum};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  Sample plain;
  Sample diff;
};

Row measure(std::size_t bytes, int reps, int world) {
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  const int iters = bytes >= (std::size_t{1} << 20) ? 10 : 2000;
  std::vector<double> pw, pc, dw, dcpu;
  for (int rep = 0; rep < reps; ++rep) {
    auto plain = [&] {
      return time_on_ranks(world, iters, [n](Communicator& comm) {
        return [&comm, x = Tensor::full({n}, 1.0 + comm.rank()), g = Tensor::full({n}, 0.5)] {
          Tensor y = comm.all_reduce(x, ReduceOperation::Sum);
          Tensor gx = comm.all_reduce(g, ReduceOperation::Sum);
          (void)y;
          (void)gx;
        };
      });
    };
    auto differentiable = [&] {
      return time_on_ranks(world, iters, [n](Communicator& comm) {
        return [&comm, x = autodiff::Var(Tensor::full({n}, 1.0 + comm.rank()), true),
                g = Tensor::full({n}, 0.5)]() mutable {
          autodiff::Var y = dc::all_reduce_sum(x, comm);
          y.backward(g);
          x.zero_grad();
        };
      });
    };
    // Alternate which variant runs first.
    Sample p, d;
    if (rep % 2 == 0) {
      p = plain();
      d = differentiable();
    } else {
      d = differentiable();
      p = plain();
    }
    pw.push_back(p.wall);
    pc.push_back(p.cpu);
    dw.push_back(d.wall);
    dcpu.push_back(d.cpu);
  }
  return {{median(pw), median(pc)}, {median(dw), median(dcpu)}};
}

int parse_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

// "12.34 us" or "5.678 ms".
void print_time(double seconds) {
  if (seconds < 1e-3) {
    std::printf(" %.2f us |", seconds * 1e6);
  } else {
    std::printf(" %.3f ms |", seconds * 1e3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = std::max(1, parse_int(argc, argv, "--reps", 7));
  const int world = std::max(1, parse_int(argc, argv, "--ranks", 2));
  std::printf(
      "Differentiable all_reduce_sum vs Communicator::all_reduce, forward + backward, "
      "%d in-process ranks, F32, median of %d repetitions\n\n",
      world, reps);
  std::printf("| size | plain wall | diff wall | overhead | plain CPU | diff CPU | overhead |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t bytes : {std::size_t{4} << 10, std::size_t{16} << 20}) {
    const Row row = measure(bytes, reps, world);
    if (bytes < (std::size_t{1} << 20)) {
      std::printf("| %zu KiB |", bytes >> 10);
    } else {
      std::printf("| %zu MiB |", bytes >> 20);
    }
    print_time(row.plain.wall);
    print_time(row.diff.wall);
    std::printf(" %+.1f%% |", 100.0 * (row.diff.wall - row.plain.wall) / row.plain.wall);
    print_time(row.plain.cpu);
    print_time(row.diff.cpu);
    std::printf(" %+.1f%% |\n", 100.0 * (row.diff.cpu - row.plain.cpu) / row.plain.cpu);
  }
  return 0;
}
