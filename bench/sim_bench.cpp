// sim_bench: the simulated world's predictions (issue 34; docs/collectives.md, "The simulated
// world"). Every number it prints under "simulated" is a virtual time of the LinkModel it states,
// not a measurement: the real Communicator and algorithms run over SimTransport in timing mode
// (sizes only, no payload), one rank at a time on this machine.
//
//   sim_bench [--worlds 8,64,256,1024] [--sizes 4096,...] [--validate] [--quick] [--hierarchical]
//
// Table 1: for each world size and size per rank, the simulated all_reduce time (µs) of every
// Algorithm this build has (Auto's column says which one it picks for the cluster model), on the
// cluster model (LinkModel::cluster(): 8 ranks per host, 100 Gb/s NICs, 16 hosts per switch).
// Tree stages W x size bytes at its root: "-" where that is over 1 GiB.
//
// --hierarchical: instead of table 1, flat against hierarchical on the cluster model: the best
// flat algorithm (Direct, Ring, HalvingDoubling; RecursiveDoubling up to 64 KiB) against
// HostHierarchy's all_reduce (simulate_hierarchical: host reduce, the leaders' all_reduce with the
// best of the same four, host broadcast), each with the algorithm that won.
//
// --fit FILE: --validate-only, then writes the three fitted one-host models (in process, shared
// memory, TCP: alpha, beta, gamma, o) to FILE as JSON. Nothing reads the file yet: Auto still
// runs on the measured thresholds (algorithms/selection.h).
//
// --validate: how far the model is from this machine. Fits a one-host model (latency, bandwidth,
// fold cost; the ranks share this machine's cores) to measured all_reduce times of 2 ranks, then
// predicts the other world sizes and compares (predicted, measured, ratio; ratios outside 0.8-1.25
// are flagged "off"):
//   in process: measured now (20th percentile of the iterations), threads of this process,
//   world 2, 3, 4 and 8, Auto's Direct;
//   TCP and shared memory: the processes of tcp_collective_bench's 2026-12-03 run (commit
//   213269b, docs/performance.md "Current tables"), worlds 2 and 4, the algorithm Auto chose.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/sim/sim_runs.h"
#include "collective/algorithms/selection.h"

namespace {

using namespace ruccl;
using namespace ruccl::bench;

std::vector<std::size_t> parse_list(const char* text) {
  std::vector<std::size_t> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::strtoull(item.c_str(), nullptr, 10));
  return out;
}

void print_predictions(const std::vector<std::size_t>& worlds,
                       const std::vector<std::size_t>& sizes) {
  const LinkModel model = LinkModel::cluster();
  const std::vector<Algorithm> algorithms = all_algorithms();
  std::printf("## Simulated all_reduce (F32), virtual µs: SIMULATED, not measured\n\n");
  std::printf("Link model: %s; agreement %s\n\n", model.describe().c_str(),
              "2 ceil(log2 W) (alpha + o) after the last record");
  std::printf("| world | size |");
  for (Algorithm a : algorithms) std::printf(" %s |", algorithm_name(a));
  std::printf("\n|---:|---:|");
  for (std::size_t i = 0; i < algorithms.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (std::size_t w : worlds) {
    const int world = static_cast<int>(w);
    auto skipped = [&](Algorithm a, std::size_t bytes) {
      return a == Algorithm::Auto ||  // the same run as the algorithm it picks
             (a == Algorithm::Tree && bytes * w > (std::size_t{1} << 30));
    };
    // One group per algorithm: an algorithm that fails (NaN: "error") takes only its own column.
    std::vector<std::vector<double>> by_algorithm(algorithms.size());
    for (std::size_t i = 0; i < algorithms.size(); ++i) {
      std::vector<SimCall> calls;
      for (std::size_t bytes : sizes) {
        if (!skipped(algorithms[i], bytes)) calls.push_back({algorithms[i], bytes});
      }
      if (!calls.empty()) by_algorithm[i] = simulate_all_reduces(world, model, calls);
    }
    std::vector<std::size_t> next(algorithms.size(), 0);
    for (std::size_t bytes : sizes) {
      std::vector<double> row(algorithms.size(), -1.0);
      for (std::size_t i = 0; i < algorithms.size(); ++i) {
        if (!skipped(algorithms[i], bytes)) row[i] = by_algorithm[i][next[i]++];
      }
      const Algorithm picked =
          auto_algorithm(OpKind::AllReduce, bytes, LinkKind::Copying, CommunicatorOptions{}, world);
      std::printf("| %d | %s |", world, size_text(bytes).c_str());
      for (std::size_t i = 0; i < algorithms.size(); ++i) {
        if (algorithms[i] == Algorithm::Auto) {
          for (std::size_t j = 0; j < algorithms.size(); ++j) {
            if (algorithms[j] == picked)
              std::printf(" %.1f (%s) |", row[j] * 1e6, algorithm_name(picked));
          }
        } else if (std::isnan(row[i])) {
          std::printf(" error |");
        } else if (row[i] < 0) {
          std::printf(" - |");
        } else {
          std::printf(" %.1f |", row[i] * 1e6);
        }
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  std::printf("\n");
}

// The fastest of `algorithms`' times (NaN: failed), with its algorithm.
std::pair<double, Algorithm> fastest(const std::vector<Algorithm>& algorithms,
                                     const std::vector<double>& times) {
  std::pair<double, Algorithm> best{std::nan(""), Algorithm::Auto};
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    if (!std::isnan(times[i]) && !(times[i] >= best.first)) best = {times[i], algorithms[i]};
  }
  return best;
}

void print_hierarchical(const std::vector<std::size_t>& worlds,
                        const std::vector<std::size_t>& sizes) {
  const LinkModel model = LinkModel::cluster();
  const std::vector<Algorithm> flat = {Algorithm::Direct, Algorithm::Ring,
                                       Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling};
  std::printf(
      "## Simulated all_reduce (F32), flat against hierarchical, virtual µs: SIMULATED\n\n");
  std::printf("Link model: %s\n\n", model.describe().c_str());
  std::printf(
      "| world | size | best flat | hierarchical (leaders' algorithm) | flat / hierarchical |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (std::size_t w : worlds) {
    const int world = static_cast<int>(w);
    // RecursiveDoubling gathers W inputs on every rank: left out above 64 KiB (Auto never picks
    // it there, and W x size bytes per rank would not fit this machine's memory at 1,024 ranks).
    auto skipped = [](Algorithm a, std::size_t bytes) {
      return a == Algorithm::RecursiveDoubling && bytes > (std::size_t{64} << 10);
    };
    std::vector<std::vector<double>> by_algorithm(flat.size());  // [algorithm][size]
    for (std::size_t i = 0; i < flat.size(); ++i) {
      std::vector<SimCall> calls;
      for (std::size_t bytes : sizes) {
        if (!skipped(flat[i], bytes)) calls.push_back({flat[i], bytes});
      }
      if (!calls.empty()) by_algorithm[i] = simulate_all_reduces(world, model, calls);
    }
    std::vector<std::size_t> next(flat.size(), 0);
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      std::vector<double> flat_times, hier_times;
      for (std::size_t i = 0; i < flat.size(); ++i) {
        const bool skip = skipped(flat[i], sizes[s]);
        flat_times.push_back(skip ? std::nan("") : by_algorithm[i][next[i]++]);
        hier_times.push_back(skip ? std::nan("")
                                  : simulate_hierarchical(world, model, sizes[s], flat[i]));
      }
      const auto [f, fa] = fastest(flat, flat_times);
      const auto [h, ha] = fastest(flat, hier_times);
      std::printf("| %d | %s | %.1f (%s) | %.1f (%s) | %.2f |\n", world,
                  size_text(sizes[s]).c_str(), f * 1e6, algorithm_name(fa), h * 1e6,
                  algorithm_name(ha), f / h);
      std::fflush(stdout);
    }
  }
  std::printf("\n");
}

// Prints predicted vs measured for `points` with `model`; returns how many are off (> 20 %).
int print_validation(const char* path, const LinkModel& model, const std::vector<Measured>& points,
                     bool fitted_on_2) {
  int off = 0;
  for (const Measured& m : points) {
    const double predicted = simulate_all_reduces(m.world, model, {{m.algorithm, m.bytes}})[0];
    const double ratio = predicted / m.seconds;
    const bool is_off = ratio < 0.8 || ratio > 1.25;
    if (!(m.world == 2 && fitted_on_2)) off += is_off ? 1 : 0;
    std::printf("| %s | %d | %s | %s | %.1f | %.1f | %.2f | %s |\n", path, m.world,
                size_text(m.bytes).c_str(), algorithm_name(m.algorithm), predicted * 1e6,
                m.seconds * 1e6, ratio,
                m.world == 2 && fitted_on_2 ? "fit" : (is_off ? "**off**" : "ok"));
  }
  return off;
}

std::vector<Measured> recorded(LinkKind link, const double (&us)[2][5]) {
  const std::size_t sizes[5] = {4096, 65536, 1u << 20, 16u << 20, 64u << 20};
  std::vector<Measured> out;
  for (int wi = 0; wi < 2; ++wi) {
    const int world = wi == 0 ? 2 : 4;
    for (int s = 0; s < 5; ++s) {
      out.push_back(
          {world, sizes[s],
           auto_algorithm(OpKind::AllReduce, sizes[s], link, CommunicatorOptions{}, world),
           us[wi][s] * 1e-6});
    }
  }
  return out;
}

// Writes the fitted one-host models as JSON: per path, the link's alpha (s), beta (bytes/s), the
// fold's gamma (s per byte) and the per-message overhead o (s).
void write_fit(const std::string& path,
               const std::vector<std::pair<std::string, LinkModel>>& fitted) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "sim_bench: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fprintf(f, "{\n  \"fitted_at_world\": 2,\n  \"paths\": [\n");
  for (std::size_t i = 0; i < fitted.size(); ++i) {
    const LinkModel& m = fitted[i].second;
    std::fprintf(f,
                 "    {\"path\": \"%s\", \"alpha_s\": %.6g, \"bytes_per_s\": %.6g, "
                 "\"fold_s_per_byte\": %.6g, \"message_overhead_s\": %.6g}%s\n",
                 fitted[i].first.c_str(), m.in_host.alpha_s, m.in_host.bytes_per_s,
                 m.fold_s_per_byte, m.message_overhead_s, i + 1 < fitted.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  std::printf("Wrote the fitted models to %s\n", path.c_str());
}

void validate(bool quick, const std::string& fit_path) {
  std::printf(
      "## Validation: predicted (simulated, one-host model fitted at world 2) against "
      "measured\n\n");
  // docs/performance.md, "Current tables: 2026-12-03": all_reduce µs, worlds 2 and 4,
  // 4 KiB / 64 KiB / 1 MiB / 16 MiB / 64 MiB.
  const double shm_us[2][5] = {{2.2, 8.5, 156.0, 2994.8, 16893.0},
                               {18.2, 60.3, 602.8, 14464.6, 70618.5}};
  const double tcp_us[2][5] = {{5.8, 18.1, 267.2, 5100.6, 24101.1},
                               {53.0, 140.7, 674.0, 20592.4, 92629.2}};
  std::vector<Measured> in_process;
  const std::vector<std::size_t> sizes =
      quick ? std::vector<std::size_t>{4096, 1u << 20}
            : std::vector<std::size_t>{4096, 65536, 1u << 20, 16u << 20};
  for (int world : {2, 3, 4, 8}) {
    for (std::size_t bytes : sizes) {
      in_process.push_back(
          {world, bytes, Algorithm::Direct, measure_in_process(world, bytes, Algorithm::Direct)});
    }
  }
  struct Path {
    const char* name;
    std::vector<Measured> points;
  };
  const std::vector<Path> paths = {{"in process", in_process},
                                   {"shared memory", recorded(LinkKind::SharedMemory, shm_us)},
                                   {"TCP", recorded(LinkKind::Copying, tcp_us)}};
  std::printf(
      "| path | world | size | algorithm | predicted µs | measured µs | predicted / "
      "measured | |\n|---|---:|---:|---|---:|---:|---:|---|\n");
  std::vector<std::string> models;
  std::vector<std::pair<std::string, LinkModel>> fitted;
  int off = 0, total = 0;
  for (const Path& p : paths) {
    std::vector<Measured> at_2;
    for (const Measured& m : p.points) {
      if (m.world == 2) at_2.push_back(m);
    }
    const LinkModel model =
        fit_one_host(at_2, LinkModel::one_host(SimLink{2e-6, 5e9}, 0.2e-9, 1e-6));
    models.push_back(std::string(p.name) + ": " + model.describe());
    fitted.emplace_back(p.name, model);
    off += print_validation(p.name, model, p.points, true);
    total += static_cast<int>(p.points.size() - at_2.size());
  }
  std::printf("\nFitted models (world 2):\n");
  for (const std::string& m : models) std::printf("- %s\n", m.c_str());
  std::printf("\n%d of %d predictions beyond world 2 are off by more than 20 %%.\n", off, total);
  if (!fit_path.empty()) write_fit(fit_path, fitted);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> worlds = {8, 64, 256, 1024};
  std::vector<std::size_t> sizes = {4096, 65536, 1u << 20, 16u << 20, 256u << 20, 1u << 30};
  bool validate_only = false, quick = false, with_validation = false, hierarchical = false;
  std::string fit_path;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--worlds") && a + 1 < argc) {
      worlds = parse_list(argv[++a]);
    } else if (!std::strcmp(argv[a], "--sizes") && a + 1 < argc) {
      sizes = parse_list(argv[++a]);
    } else if (!std::strcmp(argv[a], "--validate")) {
      with_validation = true;
    } else if (!std::strcmp(argv[a], "--validate-only")) {
      validate_only = with_validation = true;
    } else if (!std::strcmp(argv[a], "--fit") && a + 1 < argc) {
      fit_path = argv[++a];
      validate_only = with_validation = true;
    } else if (!std::strcmp(argv[a], "--hierarchical")) {
      hierarchical = true;
    } else if (!std::strcmp(argv[a], "--quick")) {
      quick = true;
    } else {
      std::fprintf(stderr,
                   "usage: sim_bench [--worlds 8,64,...] [--sizes 4096,...] [--validate | "
                   "--validate-only] [--quick] [--hierarchical] [--fit FILE]\n");
      return 2;
    }
  }
  if (hierarchical) {
    print_hierarchical(worlds, sizes);
  } else if (!validate_only) {
    print_predictions(worlds, sizes);
  }
  if (with_validation) validate(quick, fit_path);
  return 0;
}
