// gloo_collectives: the raw gloo peer of bench/tcp_collective_bench: Debian's libgloo-dev (the
// library under PyTorch's gloo backend), its TCP device on 127.0.0.1, a FileStore rendezvous in a
// fresh temporary folder, one forked process per rank; no torch, no Python.
//   all_reduce      gloo::allreduce (in place, SUM, its ring algorithm)
//   all_gather      gloo::allgather
//   reduce_scatter  gloo::ReduceScatterHalvingDoubling (gloo's only reduce-scatter; built once
//                   per size, outside the timing, as gloo's algorithm objects are meant to be
//                   used; it leaves rank r's reduced block at the start of r's buffer)
//   broadcast       gloo::broadcast (root 0)
// Protocol of tcp_collective_bench: per iteration the buffer is refilled (untimed), gloo::barrier,
// then one timed collective; an iteration's time is the maximum over ranks (a gloo MAX
// all-reduce of the times); the median over iterations is reported (and the minimum). Sizes
// follow nccl-tests (all_gather: SIZE is the output, reduce_scatter: SIZE is the input).
//
// Build: g++ -O2 -std=c++17 bench/peers/gloo_collectives.cpp -o gloo_collectives -lgloo -pthread
// Run:   ./gloo_collectives WORLD OPS SIZES [ITER_DIV]      (same OPS/SIZES/ITER_DIV as
//        collectives_mpi.c). Output (rank 0): "# ..." then "R <op> <bytes> <iters> <median_us>
//        <min_us>" per op and size.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int iters_for(std::size_t bytes, int div) {
  int n = bytes <= (16u << 10)    ? 400
          : bytes <= (256u << 10) ? 200
          : bytes <= (4u << 20)   ? 50
          : bytes <= (16u << 20)  ? 15
                                  : 8;
  n /= std::max(div, 1);
  return std::max(n, 3);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream f(text);
  std::string item;
  while (std::getline(f, item, ',')) out.push_back(item);
  return out;
}

using ReduceFn = void (*)(void*, const void*, const void*, std::size_t);

int rank_main(int rank, int world, const std::string& dir, const std::vector<std::string>& ops,
              const std::vector<std::size_t>& sizes, int div) {
  gloo::rendezvous::FileStore file_store(dir);
  gloo::rendezvous::PrefixStore store("bench", file_store);
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
  context->connectFullMesh(store, device);
  const std::size_t max_bytes = *std::max_element(sizes.begin(), sizes.end());
  std::vector<float> a(max_bytes / sizeof(float)), b(max_bytes / sizeof(float));
  const auto sum_f = static_cast<ReduceFn>(&gloo::sum<float>);
  const auto max_d = static_cast<ReduceFn>(&gloo::max<double>);
  std::uint32_t tag = 1;
  auto barrier = [&] {
    gloo::BarrierOptions o(context);
    o.setTag(tag++);
    gloo::barrier(o);
  };
  if (rank == 0)
    std::printf("# raw gloo (libgloo-dev), TCP 127.0.0.1, SUM float32, world=%d\n", world);
  for (const std::string& op : ops) {
    for (const std::size_t bytes : sizes) {
      const std::size_t count = bytes / sizeof(float);
      const std::size_t block = count / static_cast<std::size_t>(world);
      std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs;
      if (op == "reduce_scatter") {
        rs = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
            context, std::vector<float*>{a.data()}, static_cast<int>(count),
            std::vector<int>(static_cast<std::size_t>(world), static_cast<int>(block)));
      }
      auto run = [&] {
        if (op == "all_reduce") {
          gloo::AllreduceOptions o(context);
          o.setOutput(a.data(), count);
          o.setReduceFunction(sum_f);
          o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
          o.setTag(tag++);
          gloo::allreduce(o);
        } else if (op == "all_gather") {
          gloo::AllgatherOptions o(context);
          o.setInput(a.data(), block);
          o.setOutput(b.data(), count);
          o.setTag(tag++);
          gloo::allgather(o);
        } else if (op == "reduce_scatter") {
          rs->run();
        } else {
          gloo::BroadcastOptions o(context);
          o.setOutput(a.data(), count);
          o.setRoot(0);
          o.setTag(tag++);
          gloo::broadcast(o);
        }
      };
      const int iters = iters_for(bytes, div);
      const int warmup = std::max(2, iters / 8);
      std::vector<double> times;
      for (int it = -warmup; it < iters; ++it) {
        std::fill(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(count), rank + 1.0f);
        barrier();
        const double t0 = now();
        run();
        if (it >= 0) times.push_back(now() - t0);
      }
      // Check one element every rank must hold (inputs are rank + 1).
      const float want = op == "all_reduce" || op == "reduce_scatter"
                             ? static_cast<float>(world * (world + 1) / 2)
                             : 1.0f;
      // (ReduceScatterHalvingDoubling leaves rank r's block at the start of its buffer.)
      const float got = op == "all_gather" ? b[0] : a[0];
      if (got != want) {
        std::fprintf(stderr, "gloo_collectives: %s %zu: rank %d got %g, expected %g\n", op.c_str(),
                     bytes, rank, static_cast<double>(got), static_cast<double>(want));
        return 1;
      }
      gloo::AllreduceOptions o(context);  // elementwise max over ranks
      o.setOutput(times.data(), times.size());
      o.setReduceFunction(max_d);
      o.setTag(tag++);
      gloo::allreduce(o);
      if (rank == 0) {
        std::sort(times.begin(), times.end());
        std::printf("R %s %zu %d %.2f %.2f\n", op.c_str(), bytes, iters,
                    times[times.size() / 2] * 1e6, times[0] * 1e6);
        std::fflush(stdout);
      }
    }
  }
  barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: gloo_collectives WORLD OPS SIZES [ITER_DIV]\n");
    return 2;
  }
  const int world = std::atoi(argv[1]);
  const std::vector<std::string> ops = split(argv[2]);
  std::vector<std::size_t> sizes;
  for (const std::string& s : split(argv[3]))
    sizes.push_back(std::strtoull(s.c_str(), nullptr, 10));
  const int div = argc > 4 ? std::atoi(argv[4]) : 1;
  if (world < 2 || sizes.empty()) {
    std::fprintf(stderr, "gloo_collectives: expected WORLD >= 2 and sizes, got %s\n", argv[1]);
    return 2;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "ruccl_gloo_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  std::vector<pid_t> kids;
  std::fflush(stdout);  // children must not inherit buffered output
  for (int r = 0; r < world; ++r) {
    const pid_t p = fork();
    if (p == 0) {
      int rc = 1;
      try {
        rc = rank_main(r, world, tmpl, ops, sizes, div);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo_collectives: rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    kids.push_back(p);
  }
  bool bad = false;
  for (const pid_t p : kids) {
    int status = 0;
    waitpid(p, &status, 0);
    bad |= !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(tmpl, ignored);
  if (bad) std::fprintf(stderr, "gloo_collectives: a rank failed (world %d)\n", world);
  return bad ? 1 : 0;
}
