// ddp_bench: data-parallel training throughput of the MLP 784-512-512-10 (ReLU, cross-entropy,
// SGD momentum 0.9), batch 128 per rank, on 1 and 2 in-process ranks with token-weighted
// DataParallel gradients, beside PyTorch DDP over gloo (bench/peers/ddp_mlp_torch.py, the
// same model, optimizer, data shapes and timing protocol; Debian's python3-torch) measured in the
// same run.
//
//   ddp_bench [--steps 200] [--warmup 20] [--peer PATH | --no-peer] [--peer-cores CORE]
//   (CORE: the peer's OPENBLAS_CORETYPE; default SkylakeX on an AVX-512 CPU, else OpenBLAS's own)
//   (the peer script defaults to ddp_mlp_torch.py in bench/peers or $RUCCL_PEERS_DIR)
//
// Protocol (as the peer's): 16 fixed random batches per rank (x ~ N(0, 1), labels uniform), a
// step = zero_grad + forward + loss + backward + gradient all-reduce + optimizer step; 20 warm-up
// steps, then 200 timed steps; a step's time is the maximum over the ranks; median, p10, p90;
// samples/s = ranks x batch / median.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "bench/peers_dir.h"
#include "collective/in_process_group.h"
#include "optim/data_parallel.h"
#include "optim/sgd.h"
#include "tensor/backend/cpu/cpu_backend.h"

using namespace ruccl;

namespace {

struct Case {
  std::string name;
  int ranks;
  std::int64_t batch;  // per rank
  int threads;         // CPU threads per rank
  /// How the gradients are reduced: after backward (plain), while backward runs (overlapped,
  /// DataParallelOptions::overlap with 1 MiB buckets: the MLP's 2.5 MiB in 4 buckets), or not
  /// at all (compute-only: each rank steps with its own gradient, the floor overlap aims at).
  enum class Mode { Plain, Overlapped, ComputeOnly } mode = Mode::Plain;
};

struct Timing {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, samples_per_second = 0, last_loss = 0;
};

std::shared_ptr<nn::Sequential> make_mlp() {
  Generator gen(0);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(784, 512, gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(512, 512, gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(512, 10, gen)});
  model->assign_param_ids(1);
  return model;
}

Timing run_case(const Case& c, int warmup, int steps) {
  cpu::set_num_threads(c.threads);
  std::vector<Communicator> comms = InProcessGroup::create(c.ranks);
  std::vector<std::vector<double>> times(static_cast<std::size_t>(c.ranks));
  std::vector<double> losses(static_cast<std::size_t>(c.ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.ranks; ++r) {
    threads.emplace_back([&, r] {
      Communicator& comm = comms[static_cast<std::size_t>(r)];
      auto model = make_mlp();
      optim::DataParallel dp = optim::DataParallel::initialize(
          comm, *model, 0,
          {.overlap = c.mode == Case::Mode::Overlapped, .bucket_cap_bytes = 1 << 20});
      optim::Sgd sgd({.momentum = 0.9});
      Generator gen(1000 + r);
      std::vector<Tensor> xs, ys;
      for (int i = 0; i < 16; ++i) {
        xs.push_back(Tensor::randn({c.batch, 784}, gen));
        std::vector<std::int64_t> labels(static_cast<std::size_t>(c.batch));
        for (auto& l : labels) l = static_cast<std::int64_t>(gen.next_below(10));
        ys.push_back(Tensor::from_vector<std::int64_t>(labels));
      }
      auto& t = times[static_cast<std::size_t>(r)];
      for (int i = 0; i < warmup + steps; ++i) {
        const auto start = std::chrono::steady_clock::now();
        model->zero_grad();
        autodiff::Var loss = nn::cross_entropy(model->forward(autodiff::Var(xs[i % 16])),
                                               ys[i % 16], nn::Reduction::Sum);
        const auto weight = static_cast<double>(c.batch);
        optim::GradientsParams g;
        if (c.mode == Case::Mode::Overlapped) {
          g = dp.backward(*model, loss, weight, optim::LossReduction::Sum);
        } else {
          loss.backward();
          g = optim::GradientsParams::from_module(*model);
          if (c.mode == Case::Mode::Plain) {
            g = dp.reduce(*model, g, weight, optim::LossReduction::Sum);
          } else {  // the division reduce would do, so the updates have the same size
            for (const auto& [id, grad] : g.entries()) Tensor(grad).div_(weight);  // shared
          }
        }
        sgd.step(0.01, *model, g);
        const double dt =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (i >= warmup) t.push_back(dt);
        if (i + 1 == warmup + steps) {
          losses[static_cast<std::size_t>(r)] =
              loss.value().item<float>() / static_cast<double>(c.batch);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<double> step(static_cast<std::size_t>(steps), 0.0);
  for (const auto& t : times) {
    for (std::size_t i = 0; i < step.size(); ++i) step[i] = std::max(step[i], t[i]);
  }
  std::sort(step.begin(), step.end());
  Timing out;
  out.median_ms = 1e3 * step[step.size() / 2];
  out.p10_ms = 1e3 * step[step.size() / 10];
  out.p90_ms = 1e3 * step[step.size() * 9 / 10];
  out.samples_per_second = c.ranks * static_cast<double>(c.batch) / (out.median_ms / 1e3);
  out.last_loss = losses[0];
  return out;
}

/// The peer's table rows: case name -> (samples/s, median ms), for its first core type.
std::map<std::string, std::pair<double, double>> run_peer(const std::string& script,
                                                          const std::string& cores) {
  std::map<std::string, std::pair<double, double>> rows;
  const std::string command = "/usr/bin/python3 '" + script + "' --cores " + cores + " 2>&1";
  std::cout << "# peer: " << command << std::endl;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return rows;
  char line[512];
  while (fgets(line, sizeof(line), pipe) != nullptr) {
    std::cout << "#   " << line;
    const std::string text = line;
    // "DDP weak (b128/rank)   SkylakeX      2    128   10.840 ..." : the case name is the
    // first 22 characters; then core, world, b/rank, med_ms, p10, p90, samples/s, last_loss.
    if (text.size() < 24 || text[0] == '#' || text.rfind("case", 0) == 0) continue;
    std::string name = text.substr(0, 22);
    name.erase(name.find_last_not_of(' ') + 1);
    std::istringstream rest(text.substr(22));
    std::string core;
    int world = 0;
    int batch = 0;
    double med = 0, p10 = 0, p90 = 0, sps = 0;
    if (rest >> core >> world >> batch >> med >> p10 >> p90 >> sps) rows[name] = {sps, med};
  }
  pclose(pipe);
  return rows;
}

std::string find_peer(const std::string& given) {
  const std::filesystem::path script =
      given.empty() ? std::filesystem::path(ruccl::bench::peers_dir()) / "ddp_mlp_torch.py"
                    : std::filesystem::path(given);
  return std::filesystem::exists(script) ? std::filesystem::absolute(script).string() : "";
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 200;
  int warmup = 20;
  bool peer = true;
  std::string peer_path;
  std::string peer_cores = ruccl::bench::openblas_core();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      steps = std::max(10, std::atoi(argv[++i]));
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::max(0, std::atoi(argv[++i]));
    } else if (a == "--no-peer") {
      peer = false;
    } else if (a == "--peer" && i + 1 < argc) {
      peer_path = argv[++i];
    } else if (a == "--peer-cores" && i + 1 < argc) {
      peer_cores = argv[++i];
    } else {
      std::cerr << "usage: ddp_bench [--steps N] [--warmup N] [--peer PATH | --no-peer] "
                   "[--peer-cores SkylakeX|default]\n";
      return 2;
    }
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::cout << "# ruCCL ddp_bench: MLP 784-512-512-10, SGD momentum 0.9, DataParallel over "
               "in-process ranks; "
            << cores << " cores; " << warmup << " warm-up + " << steps << " timed steps\n";
  const std::vector<Case> cases = {
      {"1 rank b128, 1 thread", 1, 128, 1},
      {"1 rank b128, 2 threads", 1, 128, static_cast<int>(std::min(2u, cores))},
      {"2 ranks b128/rank", 2, 128, 1},
      {"2 ranks b64/rank", 2, 64, 1},
      {"2 ranks b128 overlapped", 2, 128, 1, Case::Mode::Overlapped},
      {"2 ranks b128 compute-only", 2, 128, 1, Case::Mode::ComputeOnly},
  };
  std::vector<Timing> ours;
  std::cout << std::left << std::setw(26) << "case" << std::right << std::setw(6) << "ranks"
            << std::setw(7) << "b/rank" << std::setw(9) << "med_ms" << std::setw(9) << "p10"
            << std::setw(9) << "p90" << std::setw(11) << "samples/s" << std::setw(10) << "last_loss"
            << "\n";
  for (const Case& c : cases) {
    const Timing t = run_case(c, warmup, steps);
    ours.push_back(t);
    std::cout << std::left << std::setw(26) << c.name << std::right << std::setw(6) << c.ranks
              << std::setw(7) << c.batch << std::fixed << std::setprecision(3) << std::setw(9)
              << t.median_ms << std::setw(9) << t.p10_ms << std::setw(9) << t.p90_ms
              << std::setprecision(0) << std::setw(11) << t.samples_per_second
              << std::setprecision(4) << std::setw(10) << t.last_loss << std::endl;
  }
  if (!peer) return 0;
  const std::string script = find_peer(peer_path);
  if (script.empty()) {
    std::cout << "# peer ddp_mlp_torch.py not found in " << ruccl::bench::peers_dir()
              << " (set RUCCL_PEERS_DIR or --peer); no ratio\n";
    return 0;
  }
  const auto rows = run_peer(script, peer_cores);
  const auto row = [&](const char* name) {
    const auto it = rows.find(name);
    return it == rows.end() ? 0.0 : it->second.first;
  };
  std::cout << "\n| case | ruCCL samples/s | PyTorch (" << peer_cores
            << ") samples/s | ratio |\n|---|---:|---:|---:|\n";
  const std::array<std::pair<std::size_t, const char*>, 3> pairs = {
      std::pair<std::size_t, const char*>{0, "1proc ref b128"},
      {2, "DDP weak (b128/rank)"},
      {3, "DDP strong (b64/rank)"}};
  for (const auto& [i, name] : pairs) {
    const double theirs = row(name);
    std::cout << "| " << cases[i].name << " vs " << name << " | " << std::setprecision(0)
              << ours[i].samples_per_second << " | " << theirs << " | ";
    if (theirs > 0) {
      std::cout << std::setprecision(2) << ours[i].samples_per_second / theirs << "x";
    } else {
      std::cout << "n/a";
    }
    std::cout << " |\n";
  }
  return 0;
}
