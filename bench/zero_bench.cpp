// zero_bench: memory per rank and samples/s of data-parallel Adam training of a large MLP
// (default 1024-4096x7-10: 104.9 M F32 parameters, ReLU, cross-entropy) over 2 and 4 processes
// (shared memory between them, one compute thread each), plain DataParallel against ZeRO-1 and
// ZeRO-2 (DataParallelOptions::zero_stage), all overlapped with backward (25 MiB buckets); beside
// PyTorch 1.13's DDP + Adam and DDP + ZeroRedundancyOptimizer(Adam) over gloo
// (bench/peers/zero_mlp_torch.py: the same model, batch and protocol), measured in the same run.
//
//   zero_bench [--worlds 2,4] [--hidden 4096] [--layers 7] [--batch 8] [--warmup 1] [--steps 3]
//              [--no-peer] [--ruccl-run PATH]
//
// Memory per rank, the maximum over the ranks: what our allocator holds between steps (held:
// cpu::MemoryCounter::bytes_in_use after the last step, every tensor the rank's thread allocated,
// the collectives' buffers included; what the formulas count), its peak over the run, and the
// process's peak RSS (VmHWM); the formulas of FP32 Adam (Ψ parameters): plain 16Ψ bytes, ZeRO-1 8Ψ
// + 8Ψ/W, ZeRO-2 4Ψ + 12Ψ/W. PyTorch's figure is the peak RSS (it has no CPU allocator counter),
// which includes its runtime (about 0.3 GB). samples/s = W x batch / the median step (a step lasts
// as long as its slowest rank).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "bench/peers_dir.h"
#include "bench/tcp_bench_support.h"
#include "optim/adam.h"
#include "optim/data_parallel.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_memory_counter.h"

using namespace ruccl;
using namespace ruccl::bench;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::vector<int> worlds = {2, 4};
  std::int64_t hidden = 4096, layers = 7, batch = 8;
  int warmup = 1, steps = 3;
  bool peer = true;
  std::string ruccl_run;
};

const std::vector<std::string> kModes = {"plain", "zero1", "zero2"};

std::int64_t param_count(std::int64_t hidden, std::int64_t layers) {
  return 1024 * hidden + hidden + (layers - 1) * (hidden * hidden + hidden) + hidden * 10 + 10;
}

/// This process's peak resident set (VmHWM), in bytes.
std::int64_t peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

// --worker MODE HIDDEN LAYERS BATCH WARMUP STEPS: one rank of one mode; rank 0 prints
// "Z <median ms> <peak bytes> <peak rss>" (the peaks: the maximum over the ranks).
int worker(char** argv) {
  cpu::set_num_threads(1);
  const std::string mode = argv[2];
  const std::int64_t hidden = std::atoll(argv[3]), layers = std::atoll(argv[4]);
  const std::int64_t batch = std::atoll(argv[5]);
  const int warmup = std::atoi(argv[6]), steps = std::atoi(argv[7]);
  const int zero = mode == "zero1" ? 1 : mode == "zero2" ? 2 : 0;
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(600);
  Communicator comm = Communicator::from_env(Device::cpu(), options);
  cpu::MemoryCounter counter;  // from before the model: everything the rank holds
  Generator gen(7);
  std::vector<std::shared_ptr<nn::Module>> mods;
  mods.push_back(std::make_shared<nn::Linear>(1024, hidden, gen));
  for (std::int64_t l = 1; l < layers; ++l) {
    mods.push_back(std::make_shared<nn::ReLU>());
    mods.push_back(std::make_shared<nn::Linear>(hidden, hidden, gen));
  }
  mods.push_back(std::make_shared<nn::ReLU>());
  mods.push_back(std::make_shared<nn::Linear>(hidden, 10, gen));
  auto model = std::make_shared<nn::Sequential>(mods);
  model->assign_param_ids(1);
  optim::DataParallel dp =
      optim::DataParallel::initialize(comm, *model, 0, {.overlap = true, .zero_stage = zero});
  optim::Adam adam;
  Generator data(100 + static_cast<std::uint64_t>(comm.rank()));
  const Tensor x = Tensor::randn({batch, 1024}, data);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(batch));
  for (auto& l : labels) l = static_cast<std::int64_t>(data.next_below(10));
  const Tensor y = Tensor::from_vector<std::int64_t>(labels);
  std::vector<double> times;
  for (int s = 0; s < warmup + steps; ++s) {
    comm.barrier();
    const auto start = Clock::now();
    model->zero_grad();
    const autodiff::Var loss =
        nn::cross_entropy(model->forward(autodiff::Var(x)), y, nn::Reduction::Sum);
    const auto w = static_cast<double>(batch);
    if (zero == 2) {
      dp.step(adam, 1e-4, *model, dp.backward_shard(*model, loss, w, optim::LossReduction::Sum));
    } else {
      dp.step(adam, 1e-4, *model, dp.backward(*model, loss, w, optim::LossReduction::Sum));
    }
    if (s >= warmup) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const std::vector<double> slowest =
      comm.all_reduce(Tensor::from_vector(times), ReduceOperation::Max).to_vector<double>();
  const std::vector<std::int64_t> peaks =
      comm.all_reduce(Tensor::from_vector<std::int64_t>(
                          {counter.peak_bytes(), peak_rss(), counter.bytes_in_use()}),
                      ReduceOperation::Max)
          .to_vector<std::int64_t>();
  std::vector<double> sorted = slowest;
  std::sort(sorted.begin(), sorted.end());
  if (comm.rank() == 0) {
    std::printf("Z %.3f %lld %lld %lld\n", 1e3 * sorted[sorted.size() / 2],
                static_cast<long long>(peaks[0]), static_cast<long long>(peaks[1]),
                static_cast<long long>(peaks[2]));
  }
  return 0;
}

struct Row {
  double ms = 0;
  double peak = 0, rss = 0, held = 0;  // bytes (held: between steps; ours only)
  bool ok = false;
};

Row parse_row(const std::string& out, const char* tag) {
  std::istringstream lines(out);
  std::string line;
  Row row;
  while (std::getline(lines, line)) {
    const std::size_t at = line.find(tag);
    if (at == std::string::npos) continue;
    std::istringstream f(line.substr(at + std::strlen(tag)));
    if (f >> row.ms >> row.peak >> row.rss) row.ok = true;
    if (!(f >> row.held)) row.held = 0;
  }
  return row;
}

Row run_ours(const Config& c, const std::string& mode, int world) {
  const std::vector<std::string> args = {std::filesystem::canonical("/proc/self/exe").string(),
                                         "--worker",
                                         mode,
                                         std::to_string(c.hidden),
                                         std::to_string(c.layers),
                                         std::to_string(c.batch),
                                         std::to_string(c.warmup),
                                         std::to_string(c.steps)};
  bool failed = false;
  const std::string out =
      run_our_ranks(c.ruccl_run, args, world, std::chrono::seconds(900), failed);
  Row row = parse_row(out, "Z ");
  if (failed || !row.ok) {
    std::fprintf(stderr, "zero_bench: %s on %d ranks failed:\n%s", mode.c_str(), world,
                 out.c_str());
    row.ok = false;
  }
  return row;
}

Row run_peer(const Config& c, const std::string& mode, int world) {
  const std::string script = peers_dir() + "/zero_mlp_torch.py";
  const std::string cmd = "env -u OPENBLAS_CORETYPE timeout 900 /usr/bin/python3 '" + script +
                          "' --mode " + mode + " --world " + std::to_string(world) + " --hidden " +
                          std::to_string(c.hidden) + " --layers " + std::to_string(c.layers) +
                          " --batch " + std::to_string(c.batch) + " --warmup " +
                          std::to_string(c.warmup) + " --steps " + std::to_string(c.steps) +
                          " --cores " + openblas_core() + " 2>&1";
  const std::string out = run_command(cmd);
  Row row = parse_row(out, "P ");
  if (!row.ok)
    std::fprintf(stderr, "zero_bench: the PyTorch peer failed: %s\n%s", cmd.c_str(), out.c_str());
  return row;
}

double formula(const std::string& mode, double psi, int world) {
  if (mode == "plain") return 16 * psi;
  if (mode == "zero1") return 8 * psi + 8 * psi / world;
  return 4 * psi + 12 * psi / world;
}

bool parse(int argc, char** argv, Config& c) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-peer") {
      c.peer = false;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (a == "--worlds") {
      c.worlds.clear();
      for (const std::string& w : split(v)) c.worlds.push_back(std::stoi(w));
    } else if (a == "--hidden") {
      c.hidden = std::max(1LL, std::atoll(v.c_str()));
    } else if (a == "--layers") {
      c.layers = std::max(1LL, std::atoll(v.c_str()));
    } else if (a == "--batch") {
      c.batch = std::max(1LL, std::atoll(v.c_str()));
    } else if (a == "--warmup") {
      c.warmup = std::max(0, std::atoi(v.c_str()));
    } else if (a == "--steps") {
      c.steps = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--ruccl-run") {
      c.ruccl_run = v;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 8 && std::string(argv[1]) == "--worker") return worker(argv);
  Config c;
  if (!parse(argc, argv, c)) {
    std::cerr << "usage: zero_bench [--worlds 2,4] [--hidden 4096] [--layers 7] [--batch 8]"
                 " [--warmup 1] [--steps 3] [--no-peer] [--ruccl-run PATH]\n";
    return 2;
  }
  const double psi = static_cast<double>(param_count(c.hidden, c.layers));
  const double gb = 1e9;
  std::printf(
      "zero_bench: MLP 1024-%lldx%lld-10, %.1f M F32 parameters, Adam, batch %lld per "
      "rank, %d warm-up + %d timed steps, processes over shared memory, 1 thread each\n",
      static_cast<long long>(c.hidden), static_cast<long long>(c.layers), psi / 1e6,
      static_cast<long long>(c.batch), c.warmup, c.steps);
  std::printf("%-3s %-6s %9s %9s | %8s %8s %7s %8s %7s | %10s %9s %7s | %9s\n", "W", "mode",
              "step ms", "samples/s", "formula", "held GB", "held/f", "peak GB", "RSS GB",
              "torch ms", "torch s/s", "RSS GB", "ours/torch");
  for (int world : c.worlds) {
    double plain_sps = 0;
    for (const std::string& mode : kModes) {
      const Row ours = run_ours(c, mode, world);
      Row torch;
      if (c.peer && mode != "zero2") torch = run_peer(c, mode == "plain" ? "ddp" : "zero", world);
      const double sps = ours.ok ? static_cast<double>(world * c.batch) / (ours.ms / 1e3) : 0;
      if (mode == "plain") plain_sps = sps;
      const double f = formula(mode, psi, world);
      const double tsps = torch.ok ? static_cast<double>(world * c.batch) / (torch.ms / 1e3) : 0;
      std::printf("%-3d %-6s %9.1f %9.2f | %8.3f %8.3f %7.2f %8.3f %7.3f | ", world, mode.c_str(),
                  ours.ms, sps, f / gb, ours.held / gb, ours.held / f, ours.peak / gb,
                  ours.rss / gb);
      if (torch.ok) {
        std::printf("%10.1f %9.2f %7.3f | %9.2f", torch.ms, tsps, torch.rss / gb, sps / tsps);
      } else {
        std::printf("%10s %9s %7s | %9s", "-", "-", "-", "-");
      }
      if (mode != "plain" && plain_sps > 0) std::printf("   (%.2fx plain)", sps / plain_sps);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
