// gemm_bench: float32 GEMM GFLOP/s (2 n^3 / median time) of ruccl::matmul on square n x n
// matrices, next to OpenBLAS's cblas_sgemm measured in the same run by the peer program
// bench/peers/gemm_openblas.c (compiled here with the system gcc against libopenblas-dev; on an
// AVX-512 CPU run with OPENBLAS_CORETYPE=SkylakeX for that command only: Debian's OpenBLAS 0.3.21
// misdetects newer CPUs and would otherwise use its SSE3 kernels). Prints which kernel ours ran
// (the AVX-512
// sgemm, chosen at run time, or Eigen) and a markdown table.
//
// Usage: gemm_bench [--sizes 256,512,1024,2048] [--threads 1,2] [--rounds 3] [--peers DIR]
//                   [--no-peer]
// The peer folder is bench/peers (peers_dir.h: --peers or $RUCCL_PEERS_DIR override it). Timing
// is the peer's: reps chosen so each size runs about a second (5..200), median reported. Two
// figures of ours:
// matmul_out(a, b, out) into a reused output (what the peer does with C) and matmul(a, b), which
// allocates its result every call (fresh pages: page faults included). Ours and the peer alternate
// for `--rounds` rounds and the table shows medians over the rounds: the project's virtual machines
// have slow spells of seconds that would otherwise land on one side only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/peers_dir.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_sgemm.h"
#include "tensor/tensor.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

// GFLOP/s of ruccl::matmul at size n: median over reps. With `reuse`, matmul_out into one
// output tensor (as the peer reuses C); without, matmul(a, b) allocating its result each call.
double ours(int n, bool reuse) {
  ruccl::Generator gen(42);
  const ruccl::Tensor a = ruccl::Tensor::randn({n, n}, gen);
  const ruccl::Tensor b = ruccl::Tensor::randn({n, n}, gen);
  ruccl::Tensor out = ruccl::Tensor::empty({n, n});
  const auto run = [&] {
    const auto t0 = Clock::now();
    if (reuse) {
      ruccl::matmul_out(a, b, out);
    } else {
      const ruccl::Tensor c = ruccl::matmul(a, b);
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const double first = std::min(run(), run());
  const int reps = std::clamp(static_cast<int>(1.0 / first), 5, 200);
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) times.push_back(run());
  std::sort(times.begin(), times.end());
  return 2.0 * n * n * static_cast<double>(n) / times[times.size() / 2] / 1e9;
}

// Builds the OpenBLAS peer; returns the binary's path or "" (with a note on stderr).
std::string build_peer(const std::string& peers) {
  const std::string out = (std::filesystem::temp_directory_path() / "ruccl_gemm_openblas").string();
  const std::string cmd =
      "gcc -O2 '" + peers + "/gemm_openblas.c' -o '" + out + "' -lopenblas 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "# OpenBLAS peer: build failed (%s; needs libopenblas-dev)\n",
                 cmd.c_str());
    return "";
  }
  return out;
}

// GFLOP/s of OpenBLAS by n, from one run of the peer with `threads` threads.
std::map<int, double> peer(const std::string& binary, int threads, const std::vector<int>& sizes,
                           std::string& core) {
  // Appended piece by piece: g++ 12 warns (-Wrestrict, a false positive) on the chained `+`.
  const std::string core_type = ruccl::bench::openblas_core();
  std::string cmd = core_type == "default" ? "" : "OPENBLAS_CORETYPE=" + core_type + " ";
  cmd.append("OPENBLAS_NUM_THREADS=").append(std::to_string(threads));
  cmd.append(" '").append(binary).append("' ");
  cmd.append(std::to_string(threads));
  for (int n : sizes) cmd.append(" ").append(std::to_string(n));
  std::map<int, double> result;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return result;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    const std::string text(line);
    if (text.rfind("# OpenBLAS", 0) == 0) {
      const auto at = text.find("core=");
      if (at != std::string::npos) core = text.substr(at + 5, text.find(' ', at) - at - 5);
      continue;
    }
    std::istringstream fields(text);
    std::string impl;
    int t = 0;
    int n = 0;
    double median_ms = 0;
    double gflops = 0;
    if (fields >> impl >> t >> n >> median_ms >> gflops && impl == "openblas") result[n] = gflops;
  }
  pclose(pipe);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {256, 512, 1024, 2048};
  std::vector<int> thread_counts = {1, 2};
  std::string peers_flag;
  bool with_peer = true;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--sizes" && i + 1 < argc) {
      sizes = parse_list(argv[++i]);
    } else if (arg == "--threads" && i + 1 < argc) {
      thread_counts = parse_list(argv[++i]);
    } else if (arg == "--peers" && i + 1 < argc) {
      peers_flag = argv[++i];
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::stoi(argv[++i]));
    } else if (arg == "--no-peer") {
      with_peer = false;
    } else {
      std::fprintf(stderr,
                   "usage: gemm_bench [--sizes 256,512,...] [--threads 1,2] [--rounds 3] "
                   "[--peers DIR] [--no-peer]\n");
      return 2;
    }
  }
  std::string binary;
  if (with_peer) {
    const std::string peers = ruccl::bench::peers_dir(peers_flag);
    if (!std::filesystem::exists(peers + "/gemm_openblas.c")) {
      std::fprintf(stderr, "# OpenBLAS peer: no gemm_openblas.c in %s (use --peers DIR)\n",
                   peers.c_str());
    } else {
      binary = build_peer(peers);
    }
  }

  struct Row {
    int n, threads;
    double ours, fresh, peer, ratio;
  };
  std::vector<Row> rows;
  std::string core = "n/a";
  // Ours and the peer alternate `rounds` times, so that a slow spell of the (shared, virtual)
  // machine hits both; each figure is the median over rounds, and so is the ratio.
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (int threads : thread_counts) {
    ruccl::cpu::set_num_threads(threads);
    std::map<int, std::vector<double>> measured, fresh, theirs, ratios;
    for (int round = 0; round < rounds; ++round) {
      for (int n : sizes) {
        measured[n].push_back(ours(n, true));
        fresh[n].push_back(ours(n, false));
        std::fprintf(stderr, "# round %d ruccl threads=%d n=%d %.1f GFLOP/s (matmul: %.1f)\n",
                     round, threads, n, measured[n].back(), fresh[n].back());
      }
      if (binary.empty()) continue;
      const std::map<int, double> peer_round = peer(binary, threads, sizes, core);
      for (int n : sizes) {
        const auto it = peer_round.find(n);
        if (it == peer_round.end()) continue;
        theirs[n].push_back(it->second);
        ratios[n].push_back(measured[n].back() / it->second);
        std::fprintf(stderr, "# round %d openblas threads=%d n=%d %.1f GFLOP/s\n", round, threads,
                     n, it->second);
      }
    }
    for (int n : sizes) {
      rows.push_back({n, threads, median(measured[n]), median(fresh[n]), median(theirs[n]),
                      median(ratios[n])});
    }
  }

  std::printf("ruCCL float32 GEMM kernel: %s\n",
              ruccl::cpu::sgemm_available()
                  ? "ruCCL's AVX-512 sgemm (chosen at run time: this CPU has AVX-512)"
                  : "Eigen (this CPU has no AVX-512, or the build is not for x86-64)");
  std::printf(
      "sgemm, square n x n, float32, GFLOP/s = 2 n^3 / median time, median of %d alternating "
      "rounds (OpenBLAS core: %s)\n\n",
      rounds, core.c_str());
  std::printf(
      "| n | threads | ruccl matmul_out | OpenBLAS | ratio | ruccl matmul (allocating) | ratio "
      "|\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    if (r.peer > 0) {
      std::printf("| %d | %d | %.1f | %.1f | %.2f | %.1f | %.2f |\n", r.n, r.threads, r.ours,
                  r.peer, r.ratio, r.fresh, r.fresh / r.peer);
    } else {
      std::printf("| %d | %d | %.1f | n/a | n/a | %.1f | n/a |\n", r.n, r.threads, r.ours, r.fresh);
    }
  }
  return 0;
}
