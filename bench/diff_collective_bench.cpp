// diff_collective_bench: the overhead of the differentiable all_reduce_sum (forward, then
// backward through the tape) over the same two Communicator::all_reduce calls made directly, on
// two in-process ranks, F32, 4 KiB and 16 MiB. Target: under 5% at 16 MiB.
//
//   diff_collective_bench [--reps R]
//
// One iteration of "plain" is y = all_reduce(x); gx = all_reduce(g). One iteration of
// "differentiable" is y = all_reduce_sum(Var x); y.backward(g) (which runs the same all_reduce on
// g and stores it as x's gradient), then x.zero_grad(). Each variant runs R repetitions of a timed
// loop on both ranks; the table shows rank 0's median time per iteration.
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

// Per-iteration seconds of `iters` iterations of the body make_body(comm) returns (built on each
// rank's thread), `reps` times; rank 0's measurements.
template <typename MakeBody>
std::vector<double> time_on_ranks(int reps, int iters, MakeBody make_body) {
  std::vector<Communicator> comms = InProcessGroup::create(2);
  std::vector<double> seconds;
  auto rank_main = [&](int r) {
    Communicator& comm = comms[static_cast<std::size_t>(r)];
    auto body = make_body(comm);
    for (int i = 0; i < 3; ++i) body();  // warm-up (allocations, page faults)
    for (int rep = 0; rep < reps; ++rep) {
      comm.barrier();
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) body();
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
      if (r == 0) seconds.push_back(dt);
    }
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  return seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::size_t bytes;
  double plain;
  double diff;
};

Row measure(std::size_t bytes, int reps) {
  const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
  const int iters = bytes >= (std::size_t{1} << 20) ? 10 : 2000;
  // Interleave plain and differentiable repetitions so that drift in machine load hits both.
  std::vector<double> plain;
  std::vector<double> diff;
  for (int round = 0; round < reps; ++round) {
    const std::vector<double> p = time_on_ranks(1, iters, [n](Communicator& comm) {
      return [&comm, x = Tensor::full({n}, 1.0 + comm.rank()), g = Tensor::full({n}, 0.5)] {
        Tensor y = comm.all_reduce(x, ReduceOperation::Sum);
        Tensor gx = comm.all_reduce(g, ReduceOperation::Sum);
        (void)y;
        (void)gx;
      };
    });
    const std::vector<double> d = time_on_ranks(1, iters, [n](Communicator& comm) {
      return [&comm, x = autodiff::Var(Tensor::full({n}, 1.0 + comm.rank()), true),
              g = Tensor::full({n}, 0.5)]() mutable {
        autodiff::Var y = dc::all_reduce_sum(x, comm);
        y.backward(g);
        x.zero_grad();
      };
    });
    plain.insert(plain.end(), p.begin(), p.end());
    diff.insert(diff.end(), d.begin(), d.end());
  }
  return {bytes, median(plain), median(diff)};
}

int parse_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = std::max(1, parse_int(argc, argv, "--reps", 7));
  std::printf(
      "Differentiable all_reduce_sum vs Communicator::all_reduce, forward + backward, "
      "2 in-process ranks, F32, median of %d repetitions\n\n",
      reps);
  std::printf("| size | plain (2 all_reduce) | differentiable | overhead |\n");
  std::printf("|---:|---:|---:|---:|\n");
  for (std::size_t bytes : {std::size_t{4} << 10, std::size_t{16} << 20}) {
    const Row row = measure(bytes, reps);
    const double overhead = 100.0 * (row.diff - row.plain) / row.plain;
    if (bytes < (std::size_t{1} << 20)) {
      std::printf("| %zu KiB | %.2f us | %.2f us | %+.1f%% |\n", bytes >> 10, row.plain * 1e6,
                  row.diff * 1e6, overhead);
    } else {
      std::printf("| %zu MiB | %.3f ms | %.3f ms | %+.1f%% |\n", bytes >> 20, row.plain * 1e3,
                  row.diff * 1e3, overhead);
    }
  }
  return 0;
}
