// collective_bench: nccl-tests style timings of the in-process collectives (F32), world 2 and 4,
// 4 KiB .. 64 MiB; in the same run, OpenMPI's shared-memory MPI_Allreduce
// (bench/peers/run_allreduce_mpi.sh: allreduce_mpi.c over pml ob1, btl vader,self; needs
// openmpi-bin and libopenmpi-dev) and the memory-bandwidth floor (bench/peers/membw.c), with
// ratios. --peers DIR or $RUCCL_PEERS_DIR name another peer folder (peers_dir.h).
//
// Method (the MPI peer's too): per iteration every rank runs barrier(), then times
// one collective; the iteration's time is the max over ranks; the table shows the median over
// iterations. algbw = bytes / time; busbw = algbw * factor, factor = 2(n-1)/n for all_reduce,
// (n-1)/n for all_gather (bytes = output size) and reduce_scatter (bytes = input size), 1 for
// broadcast. GB = 1e9 bytes. Our ops return a new tensor, so the time includes its allocation.
//
//   collective_bench [--quick] [--no-peers] [--peers DIR] [--worlds 2,4]
//                    [--algorithm auto|direct|ring|tree|centralized|recursive_doubling|
//                                 halving_doubling] [--segment-bytes N]
//                    [--ops all_reduce,broadcast] [--csv]
//
// --csv prints one tidy CSV instead of the tables, a row per measurement and implementation
// (ruccl, and mpi-shm for the peer): op,world,bytes,impl,iters,time_us,min_us,algbw_gbs,busbw_gbs
// (tools/plot_bandwidth.sh draws bus bandwidth against size from it).
//
// --algorithm forces all_reduce / reduce / broadcast onto one algorithm (in process Auto is
// Direct), so the ring paths and their segment size (--segment-bytes, CommunicatorOptions::
// segment_bytes) can be measured here too.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/peers_dir.h"
#include "collective/collective.h"
#include "tensor/tensor.h"

namespace {

using namespace ruccl;
using Clock = std::chrono::steady_clock;

enum class BenchOp { AllReduce, AllGather, ReduceScatter, Broadcast };
const char* op_name(BenchOp op) {
  switch (op) {
    case BenchOp::AllReduce:
      return "all_reduce";
    case BenchOp::AllGather:
      return "all_gather";
    case BenchOp::ReduceScatter:
      return "reduce_scatter";
    case BenchOp::Broadcast:
      return "broadcast";
  }
  return "?";
}
double bus_factor(BenchOp op, int n) {
  switch (op) {
    case BenchOp::AllReduce:
      return 2.0 * (n - 1) / n;
    case BenchOp::AllGather:
    case BenchOp::ReduceScatter:
      return static_cast<double>(n - 1) / n;
    case BenchOp::Broadcast:
      return 1.0;
  }
  return 1.0;
}

struct Row {
  BenchOp op;
  int world;
  std::size_t bytes;
  int iters;
  double median_us;
  double min_us;
};

int iterations_for(std::size_t bytes, bool quick) {
  int iters = bytes <= (16u << 10)    ? 400
              : bytes <= (256u << 10) ? 200
              : bytes <= (4u << 20)   ? 50
              : bytes <= (16u << 20)  ? 15
                                      : 8;
  return quick ? std::max(3, iters / 8) : iters;
}

// Times one (op, world, bytes) configuration.
Row measure(BenchOp op, int world, std::size_t bytes, bool quick, Algorithm algorithm,
            std::size_t segment_bytes, bool trace = false) {
  const int iters = iterations_for(bytes, quick);
  const int warmup = std::max(2, iters / 8);
  CommunicatorOptions options;
  options.all_reduce_algorithm = algorithm;
  options.reduce_algorithm = algorithm;
  // HalvingDoubling folds in a tree (Determinism::PerAlgorithm) and broadcasts nothing: its
  // broadcast keeps Auto.
  const bool tree_fold = algorithm == Algorithm::HalvingDoubling;
  options.broadcast_algorithm = tree_fold ? Algorithm::Auto : algorithm;
  if (tree_fold) options.determinism = Determinism::PerAlgorithm;
  if (segment_bytes != 0) options.segment_bytes = segment_bytes;
  // all_gather runs RecursiveDoubling when asked per call (it has no group option).
  const CallOptions gather_options = CallOptions().with_algorithm(
      algorithm == Algorithm::RecursiveDoubling ? algorithm : Algorithm::Auto);
  std::vector<Communicator> comms = InProcessGroup::create(world, {}, options);
  std::vector<std::vector<double>> times(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Communicator& comm = comms[static_cast<std::size_t>(r)];
      if (trace) comm.trace().enable();
      // all_gather: `bytes` is the output, so each rank contributes bytes / world.
      const std::size_t in_bytes =
          op == BenchOp::AllGather ? bytes / static_cast<std::size_t>(world) : bytes;
      const auto count = static_cast<std::int64_t>(in_bytes / sizeof(float));
      const Tensor in = Tensor::full({count}, 1.0 + r, DType::F32);
      auto run = [&] {
        switch (op) {
          case BenchOp::AllReduce:
            return comm.all_reduce(in, ReduceOperation::Sum);
          case BenchOp::AllGather:
            return comm.all_gather(in, gather_options);
          case BenchOp::ReduceScatter:
            return comm.reduce_scatter(in, ReduceOperation::Sum);
          case BenchOp::Broadcast:
            return comm.broadcast(in, 0);
        }
        return Tensor();
      };
      for (int i = 0; i < warmup; ++i) run();
      auto& mine = times[static_cast<std::size_t>(r)];
      mine.reserve(static_cast<std::size_t>(iters));
      for (int i = 0; i < iters; ++i) {
        comm.barrier();
        const auto t0 = Clock::now();
        Tensor out = run();
        mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> per_iter(static_cast<std::size_t>(iters), 0.0);
  for (const auto& rank_times : times) {
    for (std::size_t i = 0; i < per_iter.size(); ++i)
      per_iter[i] = std::max(per_iter[i], rank_times[i]);
  }
  std::sort(per_iter.begin(), per_iter.end());
  return Row{op, world, bytes, iters, per_iter[per_iter.size() / 2], per_iter.front()};
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  pclose(pipe);
  return out;
}

// MPI "sm" variant rows: world -> bytes -> (median us, busbw GB/s).
using MpiTable = std::map<int, std::map<std::size_t, std::pair<double, double>>>;

MpiTable run_mpi(const std::string& peers, const std::vector<int>& worlds) {
  MpiTable table;
  std::string nps;
  for (int w : worlds) {
    if (!nps.empty()) nps += ' ';
    nps += std::to_string(w);
  }
  std::fprintf(stderr, "collective_bench: running %s/run_allreduce_mpi.sh \"%s\" (about 30 s)...\n",
               peers.c_str(), nps.c_str());
  // Appended piece by piece: g++ 12 warns (-Wrestrict, a false positive) on the chained `+`.
  std::string cmd = "bash '";
  cmd.append(peers).append("/run_allreduce_mpi.sh' '").append(nps).append("' 2>&1");
  const std::string out = run_command(cmd);
  std::istringstream lines(out);
  std::string line;
  int world = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("## mpirun -np ", 0) == 0) {
      world = std::atoi(line.c_str() + 14);
      continue;
    }
    if (world == 0 || line.empty() || line[0] == '#') continue;
    // bytes count iters median_us min_us algbw busbw (allreduce_mpi.c)
    std::istringstream f(line);
    double bytes = 0, count = 0, iters = 0, med = 0, mn = 0, alg = 0, bus = 0;
    if (f >> bytes >> count >> iters >> med >> mn >> alg >> bus) {
      table[world][static_cast<std::size_t>(bytes)] = {med, bus};
    }
  }
  if (table.empty()) std::fprintf(stderr, "collective_bench: no MPI figures:\n%s", out.c_str());
  return table;
}

// The memory bandwidth of `a[i] += b[i]` with 2 threads at 64 MiB per array (STREAM-counted
// GB/s), or 0 when membw cannot be built.
double run_membw(const std::string& peers) {
  const std::string exe = (std::filesystem::temp_directory_path() / "ruccl_bench_membw").string();
  std::fprintf(stderr, "collective_bench: building and running %s/membw.c (about 10 s)...\n",
               peers.c_str());
  run_command("gcc -O3 -march=native -fopenmp '" + peers + "/membw.c' -o '" + exe + "' 2>&1");
  const std::string out =
      run_command("OMP_NUM_THREADS=2 OMP_PROC_BIND=true '" + exe + "' 64 10 2>&1");
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("acc(a+=b)", 0) == 0) {
      std::istringstream f(line.substr(9));
      double med = 0;
      if (f >> med) return med;
    }
  }
  return 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  bool csv = false;
  bool peers_wanted = true;
  std::string peers_flag;
  std::vector<int> worlds = {2, 4};
  Algorithm algorithm = Algorithm::Auto;
  std::size_t segment_bytes = 0;  // 0: the default
  std::vector<BenchOp> ops = {BenchOp::AllReduce, BenchOp::AllGather, BenchOp::ReduceScatter,
                              BenchOp::Broadcast};
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[a], "--csv"))
      csv = true;
    else if (!std::strcmp(argv[a], "--no-peers"))
      peers_wanted = false;
    else if (!std::strcmp(argv[a], "--peers") && a + 1 < argc)
      peers_flag = argv[++a];
    else if (!std::strcmp(argv[a], "--worlds") && a + 1 < argc) {
      worlds.clear();
      std::istringstream f(argv[++a]);
      std::string w;
      while (std::getline(f, w, ',')) worlds.push_back(std::atoi(w.c_str()));
    } else if (!std::strcmp(argv[a], "--algorithm") && a + 1 < argc) {
      const std::string name = argv[++a];
      bool known = false;
      for (Algorithm x :
           {Algorithm::Auto, Algorithm::Direct, Algorithm::Ring, Algorithm::Tree,
            Algorithm::Centralized, Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling}) {
        if (name == algorithm_name(x)) {
          algorithm = x;
          known = true;
        }
      }
      if (!known) {
        std::fprintf(stderr, "collective_bench: unknown algorithm '%s'\n", name.c_str());
        return 2;
      }
    } else if (!std::strcmp(argv[a], "--segment-bytes") && a + 1 < argc) {
      segment_bytes = static_cast<std::size_t>(std::strtoull(argv[++a], nullptr, 10));
    } else if (!std::strcmp(argv[a], "--ops") && a + 1 < argc) {
      ops.clear();
      std::istringstream f(argv[++a]);
      std::string name;
      while (std::getline(f, name, ',')) {
        bool known = false;
        for (BenchOp x :
             {BenchOp::AllReduce, BenchOp::AllGather, BenchOp::ReduceScatter, BenchOp::Broadcast}) {
          if (name == op_name(x)) {
            ops.push_back(x);
            known = true;
          }
        }
        if (!known) {
          std::fprintf(stderr, "collective_bench: unknown op '%s'\n", name.c_str());
          return 2;
        }
      }
    } else {
      std::fprintf(stderr,
                   "usage: collective_bench [--quick] [--no-peers] [--peers DIR] [--worlds 2,4] "
                   "[--algorithm NAME] [--segment-bytes N] [--ops "
                   "all_reduce,all_gather,reduce_scatter,broadcast] [--csv]\n");
      return 2;
    }
  }
  const std::vector<std::size_t> sizes = {4u << 10, 16u << 10, 64u << 10, 256u << 10,
                                          1u << 20, 4u << 20,  16u << 20, 64u << 20};
  if (csv) {
    std::printf("op,world,bytes,impl,iters,time_us,min_us,algbw_gbs,busbw_gbs\n");
  } else {
    std::printf(
        "# ruCCL in-process collectives, F32, %u hardware threads, algorithm %s; time = median "
        "over iterations of the max over ranks\n",
        std::thread::hardware_concurrency(), algorithm_name(algorithm));
    std::printf("%-15s %5s %9s %6s %11s %11s %11s %11s\n", "op", "world", "size", "iters",
                "time_us", "min_us", "algbw_GB/s", "busbw_GB/s");
  }
  std::vector<Row> rows;
  for (BenchOp op : ops) {
    for (int world : worlds) {
      for (std::size_t bytes : sizes) {
        const Row row = measure(op, world, bytes, quick, algorithm, segment_bytes);
        const double algbw = static_cast<double>(bytes) / row.median_us / 1e3;
        if (csv) {
          std::printf("%s,%d,%zu,ruccl,%d,%.2f,%.2f,%.4f,%.4f\n", op_name(op), world, bytes,
                      row.iters, row.median_us, row.min_us, algbw, algbw * bus_factor(op, world));
        } else {
          std::printf("%-15s %5d %9s %6d %11.1f %11.1f %11.3f %11.3f\n", op_name(op), world,
                      size_text(bytes).c_str(), row.iters, row.median_us, row.min_us, algbw,
                      algbw * bus_factor(op, world));
        }
        std::fflush(stdout);
        rows.push_back(row);
      }
    }
  }
  if (!csv && std::find(ops.begin(), ops.end(), BenchOp::AllReduce) != ops.end()) {
    // What tracing costs (docs/observability.md): 4 KiB all_reduce with the trace off (the
    // default: one branch per call, the statistics always counted) and on (every call recorded,
    // waits observed), in alternating rounds so that a busy machine hurts both alike. World 1
    // is the call's own cost, with no peer to wait for: what a busy machine changes least.
    std::printf(
        "\n# tracing: all_reduce 4 KiB, median of rounds (each a median over iterations)\n");
    std::printf("%5s %6s %11s %11s %9s\n", "world", "rounds", "off_us", "on_us", "on-off");
    for (int world : {1, 2}) {
      std::vector<double> off, on;
      for (int round = 0; round < (quick ? 2 : 6); ++round) {
        off.push_back(
            measure(BenchOp::AllReduce, world, 4u << 10, quick, algorithm, segment_bytes, false)
                .median_us);
        on.push_back(
            measure(BenchOp::AllReduce, world, 4u << 10, quick, algorithm, segment_bytes, true)
                .median_us);
      }
      std::sort(off.begin(), off.end());
      std::sort(on.begin(), on.end());
      const double off_us = off[off.size() / 2];
      const double on_us = on[on.size() / 2];
      std::printf("%5d %6zu %11.3f %11.3f %+9.3f\n", world, off.size(), off_us, on_us,
                  on_us - off_us);
      std::fflush(stdout);
    }
  }
  const std::string peers = ruccl::bench::peers_dir(peers_flag);
  const bool found = std::filesystem::exists(peers + "/run_allreduce_mpi.sh");
  if (!peers_wanted || !found) {
    if (csv) return 0;
    std::printf("\n# peers: skipped (%s)\n",
                peers_wanted ? ("no run_allreduce_mpi.sh in " + peers + "; use --peers DIR").c_str()
                             : "--no-peers");
    return 0;
  }
  const MpiTable mpi = run_mpi(peers, worlds);
  if (csv) {  // the peer's all_reduce rows (its time is a median too; min and algbw not kept)
    for (const auto& [world, by_size] : mpi) {
      for (const auto& [bytes, figures] : by_size) {
        const double algbw = static_cast<double>(bytes) / figures.first / 1e3;
        std::printf("all_reduce,%d,%zu,mpi-shm,,%.2f,,%.4f,%.4f\n", world, bytes, figures.first,
                    algbw, figures.second);
      }
    }
    return 0;
  }
  const double acc_gbs = run_membw(peers);
  std::printf(
      "\n# all_reduce against OpenMPI shared memory (mpirun --mca btl vader,self, same run) "
      "and the memory-bandwidth floor\n");
  std::printf(
      "# floor: an in-process all-reduce must read n inputs and write n outputs, 2nS bytes, "
      "at the 2-thread a+=b rate (%.1f GB/s here)\n",
      acc_gbs);
  std::printf("%5s %9s %11s %11s %11s %11s %10s %10s %12s\n", "world", "size", "ours_us", "mpi_us",
              "ours_busbw", "mpi_busbw", "time_x", "busbw_x", "floor_us");
  for (const Row& row : rows) {
    if (row.op != BenchOp::AllReduce) continue;
    const auto w = mpi.find(row.world);
    if (w == mpi.end()) continue;
    const auto m = w->second.find(row.bytes);
    if (m == w->second.end()) continue;
    const double ours_bus =
        static_cast<double>(row.bytes) / row.median_us / 1e3 * bus_factor(row.op, row.world);
    const double floor_us =
        acc_gbs > 0 ? 2.0 * row.world * static_cast<double>(row.bytes) / (acc_gbs * 1e3) : 0;
    std::printf("%5d %9s %11.1f %11.1f %11.3f %11.3f %10.2f %10.2f %12.1f\n", row.world,
                size_text(row.bytes).c_str(), row.median_us, m->second.first, ours_bus,
                m->second.second, m->second.first / row.median_us, ours_bus / m->second.second,
                floor_us);
  }
  std::printf(
      "# time_x = mpi_us / ours_us (> 1: we are faster); busbw_x = ours_busbw / mpi_busbw\n");
  return 0;
}
