// The cost of Communicator::split and Mesh (docs/parallelism.md): for W ranks over threads (in
// process) and TCP on loopback (with and without shared memory; one thread per rank, each with its
// own transport), the median time of a split into two halves and of a Mesh {dp: 2, tp: W/2}
// (rank 0's clock, after a barrier), and the files and sockets the process opened for them
// (/proc/self/fd; a group reuses its parent's links, so 0).
//
//   split_bench [--iters N] [--worlds 4,16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/tcp_bench_support.h"
#include "collective/collective.h"
#include "collective/store/in_memory_store.h"
#include "collective/tcp_group.h"

using namespace ruccl;

namespace {

using Clock = std::chrono::steady_clock;

std::size_t open_files() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  double split_us;
  double mesh_us;
  long files;
};

Row measure(std::vector<Communicator> comms, int iters) {
  const int world = static_cast<int>(comms.size());
  std::vector<double> split_us;
  std::vector<double> mesh_us;
  const std::size_t before = open_files();
  std::size_t after = before;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Communicator& comm = comms[static_cast<std::size_t>(r)];
      std::vector<Communicator> keep;  // alive until every iteration ran, like a program's groups
      for (int i = 0; i < iters; ++i) {
        comm.barrier();
        const auto t0 = Clock::now();
        keep.push_back(*comm.split(r < world / 2 ? 0 : 1, r));
        const auto t1 = Clock::now();
        comm.barrier();
        const auto t2 = Clock::now();
        Mesh mesh(comm, {{"dp", 2}, {"tp", world / 2}});
        const auto t3 = Clock::now();
        keep.push_back(mesh.comm("tp"));
        if (r == 0) {
          split_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          mesh_us.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
        }
      }
      comm.barrier();
      if (r == 0) after = open_files();
      comm.barrier();
    });
  }
  for (auto& t : threads) t.join();
  return Row{median(split_us), median(mesh_us),
             static_cast<long>(after) - static_cast<long>(before)};
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  std::vector<int> worlds = {4, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--iters") {
      iters = std::atoi(argv[i + 1]);
    } else if (flag == "--worlds") {
      worlds.clear();
      for (const char* p = argv[i + 1]; *p != '\0';) {
        worlds.push_back(std::atoi(p));
        while (*p != '\0' && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    } else {
      std::fprintf(stderr, "usage: split_bench [--iters N] [--worlds 4,16]\n");
      return 2;
    }
  }
  std::printf(
      "| transport | W | split (us, median) | Mesh dp=2 x tp=W/2 (us, median) | files "
      "and sockets opened |\n|---|---|---|---|---|\n");
  for (int world : worlds) {
    const struct {
      const char* name;
      std::vector<Communicator> (*make)(int);
    } kinds[] = {
        {"threads", [](int w) { return InProcessGroup::create(w); }},
        {"tcp", [](int w) { return bench::loopback_tcp_group(w, false); }},
        {"tcp + shared memory", [](int w) { return bench::loopback_tcp_group(w, true); }},
    };
    for (const auto& kind : kinds) {
      const Row row = measure(kind.make(world), iters);
      std::printf("| %s | %d | %.1f | %.1f | %ld |\n", kind.name, world, row.split_us, row.mesh_us,
                  row.files);
      std::fflush(stdout);
    }
  }
}
