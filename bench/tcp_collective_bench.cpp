// tcp_collective_bench: nccl-tests style timings of the collectives over the TCP transport
// between processes of this machine (F32; world 2 and 4; 4 KiB .. 64 MiB), with in the same run
// the peers of bench/peers/: OpenMPI over TCP (collectives_mpi.c, mpirun --mca pml ob1 --mca btl
// tcp,self --mca btl_tcp_if_include lo), raw gloo (gloo_collectives.cpp, libgloo-dev), PyTorch's
// gloo (collectives_torch_gloo.py, python3-torch), and the raw loopback TCP bound
// (tcp_bound.c: the same bytes moved by plain sockets, no framing, no arithmetic). A peer that
// is not installed is reported so, never estimated. Ours runs twice: every message over TCP
// (RUCCL_TCP_SHARED_MEMORY=off: the TCP table), and as it runs by default between processes of
// one host, messages through shared memory (the second table, beside OpenMPI's shared-memory BTL,
// vader, and the TCP-only gloo peers, which have no shared-memory path).
//
// Method (every implementation's): per iteration every rank passes a barrier, then times one
// collective; an iteration's time is the max over ranks; an implementation's figure in a round is
// the median over iterations (400/200/50/15/8 iterations up to 16 KiB/256 KiB/4 MiB/16 MiB/more);
// the table shows the median over rounds. Rounds alternate ours and the peers (the order flips
// each round), since the machine is shared and noisy. algbw = bytes / time, busbw = algbw *
// factor (2(n-1)/n all_reduce, (n-1)/n all_gather (bytes = output) and reduce_scatter (bytes =
// input), 1 broadcast), GB = 1e9 B. Our ops return a new tensor: the time includes its
// allocation. Our ranks are this program started `world` times with the RUCCL_* variables (or
// through ruccl-run, --ruccl-run PATH), joined by Communicator::from_env().
//
//   tcp_collective_bench [--ops all_reduce,all_gather,reduce_scatter,broadcast] [--worlds 2,4]
//       [--sizes 4096,65536,...] [--algorithm auto|direct|ring|tree|recursive_doubling|
//                                             halving_doubling] [--segment-bytes N]
//       [--rounds R] [--quick] [--no-peers] [--peers DIR] [--csv] [--ruccl-run PATH]
//   tcp_collective_bench --crossover [--worlds 2,4] [--rounds R] [--quick] [--csv]
//       [--shared-memory off|auto]
//       Direct vs Ring vs Tree vs RecursiveDoubling vs HalvingDoubling all_reduce, 4 KiB .. 16 MiB:
//       where Algorithm::Auto should switch (every message over TCP, or, with --shared-memory
//       auto, through shared memory).
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/peers_dir.h"
#include "bench/tcp_bench_support.h"
#include "collective/algorithms/selection.h"
#include "collective/collective.h"
#include "tensor/tensor.h"

namespace {

using namespace ruccl;
using namespace ruccl::bench;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "broadcast"};

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "broadcast") return 1.0;
  return static_cast<double>(n - 1) / n;
}

int iters_for(std::size_t bytes, int div) {
  int n = bytes <= (16u << 10)    ? 400
          : bytes <= (256u << 10) ? 200
          : bytes <= (4u << 20)   ? 50
          : bytes <= (16u << 20)  ? 15
                                  : 8;
  return std::max(3, n / std::max(div, 1));
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

Algorithm algorithm_from(const std::string& name) {
  for (Algorithm a : {Algorithm::Auto, Algorithm::Direct, Algorithm::Ring, Algorithm::Tree,
                      Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling}) {
    if (name == algorithm_name(a)) return a;
  }
  throw std::invalid_argument(
      "expected auto, direct, ring, tree, recursive_doubling or halving_doubling, got '" + name +
      "'");
}

// One rank: argv = --worker OPS SIZES ITER_DIV ALGORITHM SEGMENT_BYTES SHARED_MEMORY (auto|off).
// Rank 0 prints the R lines.
int worker(char** argv) {
  ::setenv("RUCCL_TCP_SHARED_MEMORY", argv[7], 1);
  const std::vector<std::string> ops = split(argv[2]);
  std::vector<std::size_t> sizes;
  for (const std::string& s : split(argv[3])) sizes.push_back(std::stoull(s));
  const int div = std::atoi(argv[4]);
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(120);
  const Algorithm algorithm = algorithm_from(argv[5]);
  options.all_reduce_algorithm = options.reduce_algorithm = options.broadcast_algorithm = algorithm;
  if (algorithm == Algorithm::HalvingDoubling) {  // a tree fold: no broadcast, per-algorithm bits
    options.broadcast_algorithm = Algorithm::Auto;
    options.determinism = Determinism::PerAlgorithm;
  }
  const CallOptions gather_options = CallOptions().with_algorithm(
      algorithm == Algorithm::RecursiveDoubling ? algorithm : Algorithm::Auto);
  if (std::atoll(argv[6]) > 0) options.segment_bytes = std::stoull(argv[6]);
  Communicator comm = Communicator::from_env(Device::cpu(), options);
  const int n = comm.world_size(), r = comm.rank();
  if (r == 0)
    std::printf("# ruCCL over TCP, %d processes, algorithm %s, shared memory %s\n", n, argv[5],
                argv[7]);
  for (const std::string& op : ops) {
    for (const std::size_t bytes : sizes) {
      const std::size_t in_bytes = op == "all_gather" ? bytes / static_cast<std::size_t>(n) : bytes;
      const Tensor in =
          Tensor::full({static_cast<std::int64_t>(in_bytes / 4)}, r + 1.0, DType::F32);
      auto run = [&] {
        if (op == "all_reduce") return comm.all_reduce(in, ReduceOperation::Sum);
        if (op == "all_gather") return comm.all_gather(in, gather_options);
        if (op == "reduce_scatter") return comm.reduce_scatter(in, ReduceOperation::Sum);
        return comm.broadcast(in, 0);
      };
      const int iters = iters_for(bytes, div);
      const int warmup = std::max(2, iters / 8);
      std::vector<double> times;
      Tensor out;
      for (int it = -warmup; it < iters; ++it) {
        out = Tensor();
        comm.barrier();
        const auto t0 = Clock::now();
        out = run();
        if (it >= 0)
          times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      const float want = op == "all_reduce" || op == "reduce_scatter" ? n * (n + 1) / 2.0f : 1.0f;
      const float* got = out.data<float>();
      if (got[0] != want || got[out.numel() - 1] != (op == "all_gather" ? float(n) : want)) {
        std::fprintf(stderr, "tcp_collective_bench: %s %zu: rank %d got %g, expected %g\n",
                     op.c_str(), bytes, r, double(got[0]), double(want));
        return 1;
      }
      const Tensor slowest = comm.all_reduce(Tensor::from_vector(times), ReduceOperation::Max);
      if (r == 0) {
        std::vector<double> v = slowest.to_vector<double>();
        std::sort(v.begin(), v.end());
        std::printf("R %s %zu %d %.2f %.2f\n", op.c_str(), bytes, iters, v[v.size() / 2], v[0]);
        std::fflush(stdout);
      }
    }
  }
  comm.barrier();
  return 0;
}

struct Config {
  std::vector<std::string> ops = kOps;
  std::vector<int> worlds = {2, 4};
  std::vector<std::size_t> sizes = {4u << 10, 64u << 10, 1u << 20, 16u << 20, 64u << 20};
  std::string algorithm = "auto";
  std::size_t segment_bytes = 0;
  int rounds = 3;
  int div = 1;
  bool peers = true, csv = false, crossover = false;
  std::string crossover_shared_memory = "off";  // --crossover: RUCCL_TCP_SHARED_MEMORY
  std::string peers_dir, ruccl_run, self;
};

std::string sizes_arg(const Config& c) {
  std::string out;
  for (std::size_t s : c.sizes) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

// Our ranks for one world size, one algorithm; parsed into `res` as `impl`. `shared_memory`:
// RUCCL_TCP_SHARED_MEMORY for the ranks (off: every message over TCP).
void run_ours(const Config& c, int world, const std::string& algorithm, const std::string& impl,
              Results& res, const char* shared_memory = "off") {
  const std::vector<std::string> args = {c.self,
                                         std::string("--worker"),
                                         join(c.ops),
                                         sizes_arg(c),
                                         std::to_string(c.div),
                                         algorithm,
                                         std::to_string(c.segment_bytes),
                                         std::string(shared_memory)};
  bool failed = false;
  const std::string out =
      run_our_ranks(c.ruccl_run, args, world, std::chrono::seconds(900), failed);
  if (res.parse(impl, world, out) == 0 || failed)
    std::fprintf(stderr, "tcp_collective_bench: our %d ranks (%s) failed:\n%s", world,
                 algorithm.c_str(), out.c_str());
}

struct Peer {
  std::string impl, needs;
  std::string build;  // empty: nothing to build
  std::string run;    // "{N}" is the world size
  bool available = false;
};

// Builds the peers into `bin` (a fresh temporary folder the caller removes).
std::vector<Peer> prepare_peers(const Config& c, const std::string& bin) {
  const std::string dir = peers_dir(c.peers_dir);
  std::filesystem::create_directories(bin);
  const std::string args = " " + join(c.ops) + " " + sizes_arg(c) + " " + std::to_string(c.div);
  std::vector<Peer> peers = {
      {"mpi", "openmpi-bin, libopenmpi-dev",
       "mpicc -O2 '" + dir + "/collectives_mpi.c' -o '" + bin + "/collectives_mpi'",
       "mpirun -np {N} --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl "
       "tcp,self --mca btl_tcp_if_include lo '" +
           bin + "/collectives_mpi'" + args},
      // The same program over OpenMPI's shared-memory BTL (vader, with its single-copy CMA): the
      // peer of our shared-memory path.
      {"mpi-shm", "openmpi-bin, libopenmpi-dev", "test -x '" + bin + "/collectives_mpi'",
       "mpirun -np {N} --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl "
       "vader,self '" +
           bin + "/collectives_mpi'" + args},
      {"gloo", "libgloo-dev",
       "g++ -O2 -std=c++17 '" + dir + "/gloo_collectives.cpp' -o '" + bin +
           "/gloo_collectives' -lgloo -pthread",
       "'" + bin + "/gloo_collectives' {N}" + args},
      {"torch", "python3-torch (for /usr/bin/python3)",
       "/usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()'",
       "/usr/bin/python3 '" + dir + "/collectives_torch_gloo.py' {N}" + args},
      {"raw", "gcc", "gcc -O2 '" + dir + "/tcp_bound.c' -o '" + bin + "/tcp_bound'",
       "'" + bin + "/tcp_bound' {N}" + args},
  };
  for (Peer& p : peers) {
    p.available = command_ok(p.build);
    if (!p.available)
      std::fprintf(stderr, "tcp_collective_bench: peer %s not available (needs %s)\n",
                   p.impl.c_str(), p.needs.c_str());
  }
  return peers;
}

void run_peer(const Peer& p, int world, Results& res) {
  if (!p.available) {
    res.missing[{p.impl, "", world}] = "not installed (" + p.needs + ")";
    return;
  }
  std::string cmd = p.run;
  cmd.replace(cmd.find("{N}"), 3, std::to_string(world));
  // The peers run with OpenBLAS's own CPU detection (the machine's brief: no OPENBLAS_CORETYPE).
  const std::string out = run_command("env -u OPENBLAS_CORETYPE timeout 900 " + cmd + " 2>&1");
  if (res.parse(p.impl, world, out) == 0 && res.why_missing(p.impl, "", world).empty()) {
    res.missing[{p.impl, "", world}] = "failed (see stderr)";
    std::fprintf(stderr, "tcp_collective_bench: peer %s, world %d failed:\n%s", p.impl.c_str(),
                 world, out.c_str());
  }
}

// --csv: one tidy row per (op, world, size, implementation) measured, for plotting
// (tools/plot_bandwidth.sh): op,world,bytes,impl,time_us,busbw_gbs.
void print_csv(const Config& c, const Results& res) {
  std::printf("op,world,bytes,impl,time_us,busbw_gbs\n");
  for (const std::string& op : c.ops) {
    for (int w : c.worlds) {
      for (const char* impl : {"ruccl", "ruccl-shm", "mpi", "mpi-shm", "gloo", "torch", "raw"}) {
        for (std::size_t bytes : c.sizes) {
          const double us = res.median(impl, op, w, bytes);
          if (us <= 0) {
            const std::string why = res.why_missing(impl, op, w);
            if (bytes == c.sizes.front() && !why.empty())
              std::fprintf(stderr, "# %s %s, %d processes: %s\n", impl, op.c_str(), w, why.c_str());
            continue;
          }
          std::printf("%s,%d,%zu,%s,%.2f,%.4f\n", op.c_str(), w, bytes, impl, us,
                      double(bytes) / us / 1e3 * bus_factor(op, w));
        }
      }
    }
  }
}

// One table per op and world: `ours` (an impl of ours) against `peers` (their names in `names`),
// time, busbw, and peer time / our time (the last peer's ratio is named `last_ratio`).
void print_table(const Config& c, const Results& res, const std::string& op, int w,
                 const char* title, const std::string& ours_impl,
                 const std::vector<std::string>& peers, const std::vector<std::string>& names,
                 const std::string& last_ratio) {
  std::printf(
      "\n#### %s, %d processes, %s: time us (median over %d rounds), busbw GB/s, ratio = peer "
      "time / our time (> 1: we are faster)\n",
      op.c_str(), w, title, c.rounds);
  for (const std::string& p : peers) {
    const std::string why = res.why_missing(p, op, w);
    if (!why.empty()) std::printf("%s: %s\n", p.c_str(), why.c_str());
  }
  std::printf("\n");
  std::vector<std::string> heading = {"size", "ruccl us"};
  for (const std::string& n : names) heading.push_back(n + " us");
  heading.push_back("ruccl busbw");
  for (const std::string& n : names) heading.push_back(n + " busbw");
  for (std::size_t i = 0; i + 1 < names.size(); ++i) heading.push_back("x " + names[i]);
  heading.push_back(last_ratio);
  print_row(heading, false);
  print_row(std::vector<std::string>(heading.size(), "---:"), false);
  for (std::size_t bytes : c.sizes) {
    const double ours = res.median(ours_impl, op, w, bytes);
    std::vector<std::string> row = {size_text(bytes), cell(ours, 1)};
    std::vector<double> t;
    for (const std::string& p : peers) t.push_back(res.median(p, op, w, bytes));
    for (double v : t) row.push_back(cell(v, 1));
    auto bus = [&](double us) {
      return us <= 0 ? -1.0 : double(bytes) / us / 1e3 * bus_factor(op, w);
    };
    row.push_back(cell(bus(ours), 3));
    for (double v : t) row.push_back(cell(bus(v), 3));
    for (double v : t) row.push_back(cell(ours > 0 && v > 0 ? v / ours : -1, 2));
    print_row(row, false);
  }
}

void print_tables(const Config& c, const Results& res) {
  if (c.csv) return print_csv(c, res);
  for (const std::string& op : c.ops) {
    for (int w : c.worlds) {
      // Over TCP alone (RUCCL_TCP_SHARED_MEMORY=off) against the TCP peers and the raw bound.
      print_table(c, res, op, w, "every message over TCP", "ruccl", {"mpi", "gloo", "torch", "raw"},
                  {"MPI-TCP", "gloo", "torch-gloo", "raw TCP"}, "of raw");
      // The default between processes of one host: messages through shared memory.
      print_table(c, res, op, w, "one host, messages through shared memory (the default)",
                  "ruccl-shm", {"mpi-shm", "gloo", "torch", "ruccl"},
                  {"MPI-shm", "gloo", "torch-gloo", "ruccl TCP-only"}, "x ruccl TCP-only");
    }
  }
}

const std::vector<std::string> kCrossoverAlgorithms = {"direct", "ring", "tree",
                                                       "recursive_doubling", "halving_doubling"};

void print_crossover(const Config& c, const Results& res) {
  const std::vector<std::string>& algos = kCrossoverAlgorithms;
  CommunicatorOptions defaults;
  for (int w : c.worlds) {
    std::printf(
        "\n%sall_reduce over TCP (shared memory %s), %d processes: every algorithm, time "
        "us (median over %d rounds)\n\n",
        c.csv ? "# " : "#### ", c.crossover_shared_memory.c_str(), w, c.rounds);
    print_row({"size", "direct us", "ring us", "tree us", "rec. doubling us", "halving-doubling us",
               "fastest", "ring / direct", "Auto today", "Auto per-algorithm"},
              c.csv);
    if (!c.csv) {
      print_row({"---:", "---:", "---:", "---:", "---:", "---:", "---", "---:", "---", "---"},
                false);
    }
    std::size_t ring_from = 0;
    for (std::size_t bytes : c.sizes) {
      std::vector<double> t;
      for (const std::string& a : algos) t.push_back(res.median(a, "all_reduce", w, bytes));
      std::size_t best = 0;
      for (std::size_t i = 1; i < t.size(); ++i)
        if (t[i] > 0 && (t[best] <= 0 || t[i] < t[best])) best = i;
      if (best == 1 && ring_from == 0) ring_from = bytes;
      if (best != 1) ring_from = 0;  // Ring must keep winning from there on
      const LinkKind link =
          c.crossover_shared_memory == "off" ? LinkKind::Copying : LinkKind::SharedMemory;
      const Algorithm today = auto_algorithm(OpKind::AllReduce, bytes, link, defaults, w);
      CommunicatorOptions per_algorithm = defaults;
      per_algorithm.determinism = Determinism::PerAlgorithm;
      const Algorithm fastest = auto_algorithm(OpKind::AllReduce, bytes, link, per_algorithm, w);
      print_row({size_text(bytes), cell(t[0], 1), cell(t[1], 1), cell(t[2], 1), cell(t[3], 1),
                 cell(t[4], 1), algos[best], cell(t[0] > 0 && t[1] > 0 ? t[1] / t[0] : -1, 2),
                 algorithm_name(today), algorithm_name(fastest)},
                c.csv);
    }
    std::printf(
        "%sRing is fastest from %s on (%d processes); Auto's all_reduce ring threshold is %s\n",
        c.csv ? "# " : "\n", ring_from ? size_text(ring_from).c_str() : "no size measured", w,
        size_text(w >= 3 ? defaults.ring_threshold_bytes_from_3 : defaults.ring_threshold_bytes)
            .c_str());
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: tcp_collective_bench [--ops LIST] [--worlds 2,4] [--sizes B,B,...] "
               "[--algorithm auto|direct|ring|tree] [--segment-bytes N] [--rounds R] [--quick] "
               "[--no-peers] [--peers DIR] [--csv] [--ruccl-run PATH] [--crossover] "
               "[--shared-memory off|auto]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 8 && !std::strcmp(argv[1], "--worker")) {
    try {
      return worker(argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tcp_collective_bench worker: %s\n", e.what());
      return 3;
    }
  }
  Config c;
  c.self = std::filesystem::canonical("/proc/self/exe").string();
  bool sizes_given = false;
  try {
    for (int a = 1; a < argc; ++a) {
      const std::string flag = argv[a];
      const bool has_value = a + 1 < argc;
      if (flag == "--quick")
        c.div = 8;
      else if (flag == "--no-peers")
        c.peers = false;
      else if (flag == "--csv")
        c.csv = true;
      else if (flag == "--crossover")
        c.crossover = true;
      else if (!has_value)
        return usage();
      else if (flag == "--ops")
        c.ops = split(argv[++a]);
      else if (flag == "--worlds") {
        c.worlds.clear();
        for (const std::string& w : split(argv[++a])) c.worlds.push_back(std::stoi(w));
      } else if (flag == "--sizes") {
        c.sizes.clear();
        for (const std::string& s : split(argv[++a])) c.sizes.push_back(std::stoull(s));
        sizes_given = true;
      } else if (flag == "--algorithm")
        c.algorithm = argv[++a];
      else if (flag == "--segment-bytes")
        c.segment_bytes = std::stoull(argv[++a]);
      else if (flag == "--rounds")
        c.rounds = std::max(1, std::stoi(argv[++a]));
      else if (flag == "--peers")
        c.peers_dir = argv[++a];
      else if (flag == "--ruccl-run")
        c.ruccl_run = argv[++a];
      else if (flag == "--shared-memory")
        c.crossover_shared_memory = argv[++a];
      else
        return usage();
    }
    algorithm_from(c.algorithm);
    for (const std::size_t bytes : c.sizes)
      for (const int w : c.worlds)
        if (w < 2 || bytes == 0 || bytes % (4 * static_cast<std::size_t>(w)) != 0)
          throw std::invalid_argument(
              "expected world sizes >= 2 and sizes that are multiples of "
              "4 * world, got world " +
              std::to_string(w) + ", size " + std::to_string(bytes));
    for (const std::string& op : c.ops)
      if (std::find(kOps.begin(), kOps.end(), op) == kOps.end())
        throw std::invalid_argument("unknown op '" + op + "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tcp_collective_bench: %s\n", e.what());
    return usage();
  }
  if (c.crossover) {
    c.ops = {"all_reduce"};
    if (!sizes_given)
      c.sizes = {4u << 10, 16u << 10, 64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20};
  }
  // The tidy CSV is data only: its heading goes to stderr.
  std::fprintf(c.csv && !c.crossover ? stderr : stdout,
               "# ruCCL over TCP between processes, F32, %u hardware threads, load average %s",
               std::thread::hardware_concurrency(),
               run_command("cut -d' ' -f1-3 /proc/loadavg").c_str());
  Results res;
  const std::string bin = (std::filesystem::temp_directory_path() /
                           ("ruccl_tcp_bench_peers_" + std::to_string(::getpid())))
                              .string();
  const std::vector<Peer> peers =
      c.peers && !c.crossover ? prepare_peers(c, bin) : std::vector<Peer>{};
  for (int round = 0; round < c.rounds; ++round) {
    for (int w : c.worlds) {
      std::fprintf(stderr, "tcp_collective_bench: round %d of %d, %d processes\n", round + 1,
                   c.rounds, w);
      std::vector<std::function<void()>> steps;
      if (c.crossover) {
        for (const std::string& a : kCrossoverAlgorithms)
          steps.push_back([&, a] { run_ours(c, w, a, a, res, c.crossover_shared_memory.c_str()); });
      } else {
        steps.push_back([&] { run_ours(c, w, c.algorithm, "ruccl", res); });
        steps.push_back([&] { run_ours(c, w, c.algorithm, "ruccl-shm", res, "auto"); });
        for (const Peer& p : peers) steps.push_back([&] { run_peer(p, w, res); });
      }
      if (round % 2 == 1) std::reverse(steps.begin(), steps.end());
      for (auto& s : steps) s();
    }
  }
  if (!c.peers && !c.crossover)
    for (int w : c.worlds)
      for (const char* p : {"mpi", "mpi-shm", "gloo", "torch", "raw"})
        res.missing[{p, "", w}] = "--no-peers";
  std::error_code ignored;
  std::filesystem::remove_all(bin, ignored);
  if (c.crossover)
    print_crossover(c, res);
  else
    print_tables(c, res);
  return 0;
}
