// ddp_bench: data-parallel training steps of two MLPs (ReLU, cross-entropy, SGD momentum 0.9,
// one compute thread per rank) over 2 and 4 ranks -- processes over TCP alone
// (RUCCL_TCP_SHARED_MEMORY=off), processes through shared memory (the default between processes
// of one host), and threads of one process -- in four modes: compute-only (no communication:
// each rank steps with its own gradient), plain (backward, then DataParallel::reduce),
// overlapped (DataParallel::backward with overlap: buckets reduced while backward runs) with the
// default bucket caps and with a small cap; beside PyTorch DDP over gloo
// (bench/peers/ddp_mlp_torch.py: the same model, batch, optimizer and protocol, 1 thread per
// process, default bucket_cap_mb) measured in the same run.
//
// Models: "mlp", the main job's 784-512-512-10 (2.6 MiB of gradients), and "wide",
// 784-2048-2048-10 (22.2 MiB), the largest whose run fits a few minutes on a 2-core machine;
// NAME:BATCH sets the batch per rank (default --batch 128): "wide:32" is the wide model with a
// larger share of communication.
//
//   ddp_bench [--models mlp,wide,wide:32] [--worlds 2,4] [--transports tcp,shm[,threads]]
//             [--batch 128] [--steps 120] [--warmup 10] [--wide-steps 20] [--wide-warmup 3]
//             [--rounds 10] [--small-cap-kib 1024] [--peer PATH | --no-peer]
//             [--peer-cores CORE] [--ruccl-run PATH]
//   ddp_bench --trace DIR [--models wide] [--worlds 2] [--transports tcp] ...
//       one short run of the plain and small-cap overlapped modes with
//       RUCCL_TRACE_FILE=DIR/trace.%r.json
//       (then tools/merge_traces.py and tools/plot_trace.py; docs/observability.md)
//
// The protocol is in bench/ddp/ddp_worker.cpp; the table in bench/ddp/ddp_report.cpp. Our
// process ranks are this program started with --worker and the variables ruccl-run sets.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "bench/ddp/ddp_report.h"
#include "bench/peers_dir.h"
#include "bench/tcp_bench_support.h"
#include "collective/in_process_group.h"
#include "tensor/backend/cpu/cpu_backend.h"

using namespace ruccl;
using namespace ruccl::bench;

namespace {

struct Config {
  std::vector<std::string> models = {"mlp", "wide", "wide:32"};
  std::vector<int> worlds = {2, 4};
  std::vector<std::string> transports = {"tcp", "shm"};
  std::int64_t batch = 128;
  int steps = 120, warmup = 10, wide_steps = 20, wide_warmup = 3, rounds = 10;
  std::int64_t small_cap = 1 << 20;
  bool peer = true;
  std::string peer_path, peer_cores = openblas_core(), ruccl_run, trace_dir;
};

// A model spec: NAME or NAME:BATCH ("wide:32"), the batch per rank (default --batch).
DdpWorkload workload(const Config& c, const std::string& spec) {
  const std::size_t colon = spec.find(':');
  const std::string model = spec.substr(0, colon);
  const std::int64_t batch =
      colon == std::string::npos ? c.batch : std::max(1LL, std::atoll(spec.c_str() + colon + 1));
  const bool wide = model == "wide";
  const int steps = wide ? c.wide_steps : c.steps;
  // Turns of at least 2 steps.
  return {model,
          batch,
          wide ? c.wide_warmup : c.warmup,
          steps,
          std::max(1, std::min(c.rounds, steps / 2)),
          ddp_modes(c.small_cap)};
}

// --worker MODEL BATCH WARMUP STEPS ROUNDS SMALL_CAP SHARED_MEMORY(auto|off) MODES(all|traced)
int worker(char** argv) {
  ::setenv("RUCCL_TCP_SHARED_MEMORY", argv[8], 1);
  cpu::set_num_threads(1);
  DdpWorkload w{argv[2],
                std::atoll(argv[3]),
                std::atoi(argv[4]),
                std::atoi(argv[5]),
                std::atoi(argv[6]),
                ddp_modes(std::atoll(argv[7]))};
  if (std::string(argv[9]) == "traced") w.modes = {w.modes[1], w.modes[3]};
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(300);
  Communicator comm = Communicator::from_env(Device::cpu(), options);
  const std::vector<DdpModeTiming> t = run_ddp_rank(comm, w);
  if (comm.rank() == 0) {
    for (std::size_t i = 0; i < t.size(); ++i) std::printf("%s\n", ddp_line(i, t[i]).c_str());
  }
  return 0;
}

std::vector<DdpModeTiming> run_threads(const DdpWorkload& w, int world) {
  cpu::set_num_threads(1);
  std::vector<Communicator> comms = InProcessGroup::create(world);
  std::vector<DdpModeTiming> out;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      auto t = run_ddp_rank(comms[static_cast<std::size_t>(r)], w);
      if (r == 0) out = std::move(t);
    });
  }
  for (auto& th : threads) th.join();
  return out;
}

std::vector<DdpModeTiming> run_processes(const Config& c, const DdpWorkload& w, int world,
                                         const std::string& transport, bool traced) {
  const std::vector<std::string> args = {std::filesystem::canonical("/proc/self/exe").string(),
                                         "--worker",
                                         w.model,
                                         std::to_string(w.batch),
                                         std::to_string(w.warmup),
                                         std::to_string(w.steps),
                                         std::to_string(w.rounds),
                                         std::to_string(c.small_cap),
                                         transport == "shm" ? "auto" : "off",
                                         traced ? "traced" : "all"};
  bool failed = false;
  const std::string out =
      run_our_ranks(c.ruccl_run, args, world, std::chrono::seconds(900), failed);
  std::vector<DdpModeTiming> t = parse_ddp_lines(out, traced ? 2 : w.modes.size());
  if (t.empty() || failed) {
    std::fprintf(stderr, "ddp_bench: %s, %d ranks over %s failed:\n%s", w.model.c_str(), world,
                 transport.c_str(), out.c_str());
    return {};
  }
  return t;
}

DdpPeerTiming run_peer(const Config& c, const DdpWorkload& w, int world) {
  DdpPeerTiming p;
  const std::filesystem::path script = c.peer_path.empty()
                                           ? std::filesystem::path(peers_dir()) / "ddp_mlp_torch.py"
                                           : std::filesystem::path(c.peer_path);
  if (!std::filesystem::exists(script)) {
    p.why = "peer " + script.string() + " not found (--peer PATH or RUCCL_PEERS_DIR)";
    return p;
  }
  if (!command_ok("/usr/bin/python3 -c 'import torch.distributed as d; "
                  "assert d.is_gloo_available()'")) {
    p.why = "not installed (python3-torch for /usr/bin/python3)";
    return p;
  }
  // The peer sets OPENBLAS_CORETYPE for its ranks itself (--cores); none is inherited.
  const std::string cmd = "env -u OPENBLAS_CORETYPE timeout 900 /usr/bin/python3 '" +
                          script.string() + "' --model " + w.model + " --world " +
                          std::to_string(world) + " --batch " + std::to_string(w.batch) +
                          " --warmup " + std::to_string(w.warmup) + " --steps " +
                          std::to_string(w.steps) + " --cores " + c.peer_cores + " 2>&1";
  const std::string out = run_command(cmd);
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string tag;
    double med = 0, p10 = 0, p90 = 0, sps = 0;
    if (f >> tag >> med >> p10 >> p90 >> sps && tag == "P") {
      p.median_ms = med;
      p.samples_per_second = sps;
      return p;
    }
  }
  p.why = "failed";
  std::fprintf(stderr, "ddp_bench: the PyTorch peer failed: %s\n%s", cmd.c_str(), out.c_str());
  return p;
}

int usage() {
  std::cerr << "usage: ddp_bench [--models mlp,wide,wide:32 (NAME[:BATCH])] [--worlds 2,4]"
               " [--transports tcp,shm,threads]"
               " [--batch N] [--steps N] [--warmup N] [--wide-steps N] [--wide-warmup N]"
               " [--rounds N] [--small-cap-kib N] [--peer PATH | --no-peer] [--peer-cores CORE]"
               " [--ruccl-run PATH] [--trace DIR]\n";
  return 2;
}

bool parse(int argc, char** argv, Config& c) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--no-peer") {
      c.peer = false;
    } else if (!has) {
      return false;
    } else if (a == "--models") {
      c.models = split(argv[++i]);
    } else if (a == "--worlds") {
      c.worlds.clear();
      for (const std::string& w : split(argv[++i])) c.worlds.push_back(std::stoi(w));
    } else if (a == "--transports") {
      c.transports = split(argv[++i]);
    } else if (a == "--batch") {
      c.batch = std::max(1LL, std::atoll(argv[++i]));
    } else if (a == "--steps" || a == "--wide-steps") {
      (a == "--steps" ? c.steps : c.wide_steps) = std::max(2, std::atoi(argv[++i]));
    } else if (a == "--warmup" || a == "--wide-warmup") {
      (a == "--warmup" ? c.warmup : c.wide_warmup) = std::max(0, std::atoi(argv[++i]));
    } else if (a == "--rounds") {
      c.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--small-cap-kib") {
      c.small_cap = std::max(1LL, std::atoll(argv[++i])) << 10;
    } else if (a == "--peer") {
      c.peer_path = argv[++i];
    } else if (a == "--peer-cores") {
      c.peer_cores = argv[++i];
    } else if (a == "--ruccl-run") {
      c.ruccl_run = argv[++i];
    } else if (a == "--trace") {
      c.trace_dir = argv[++i];
    } else {
      return false;
    }
  }
  for (const std::string& t : c.transports) {
    if (t != "tcp" && t != "shm" && t != "threads") return false;
  }
  for (const std::string& m : c.models) {
    const std::string name = m.substr(0, m.find(':'));
    if (name != "mlp" && name != "wide") return false;
  }
  return true;
}

// --trace DIR: the plain and the small-cap overlapped modes of the first model, world and process
// transport, a few steps, every rank writing DIR/trace.<rank>.json.
int trace_run(const Config& c) {
  std::filesystem::create_directories(c.trace_dir);
  const std::string pattern = (std::filesystem::absolute(c.trace_dir) / "trace.%r.json").string();
  ::setenv("RUCCL_TRACE_FILE", pattern.c_str(), 1);
  std::string transport = "tcp";
  for (const std::string& t : c.transports) {
    if (t != "threads") transport = t;
  }
  DdpWorkload w = workload(c, c.models.front());
  w.rounds = 1;
  const std::vector<DdpModeTiming> t = run_processes(c, w, c.worlds.front(), transport, true);
  ::unsetenv("RUCCL_TRACE_FILE");
  if (t.empty()) return 1;
  std::printf(
      "# traces of %s, %d processes over %s: %s (plain, then overlapped small;\n"
      "# %d + %d steps each)\n",
      w.model.c_str(), c.worlds.front(), transport.c_str(), pattern.c_str(), w.warmup, w.steps);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::printf("# %s: median step %.2f ms\n", w.modes[i == 0 ? 1 : 3].name.c_str(),
                t[i].median_ms);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 10 && std::string(argv[1]) == "--worker") return worker(argv);
  Config c;
  if (!parse(argc, argv, c) || c.models.empty() || c.worlds.empty()) return usage();
  if (!c.trace_dir.empty()) return trace_run(c);
  std::printf("# ruCCL ddp_bench: %u cores; 1 compute thread per rank; small bucket cap %lld KiB\n",
              std::max(1u, std::thread::hardware_concurrency()),
              static_cast<long long>(c.small_cap >> 10));
  DdpResults results;
  results.modes = ddp_modes(c.small_cap);
  for (const std::string& model : c.models) {
    const DdpWorkload w = workload(c, model);
    std::printf("# %s: batch %lld per rank; per mode %d warm-up + %d timed steps, in %d turns\n",
                model.c_str(), static_cast<long long>(w.batch), w.warmup, w.steps, w.rounds);
    for (int world : c.worlds) {
      for (const std::string& transport : c.transports) {
        std::vector<DdpModeTiming> t = transport == "threads"
                                           ? run_threads(w, world)
                                           : run_processes(c, w, world, transport, false);
        std::printf("# %s %d ranks %s done\n", model.c_str(), world, transport.c_str());
        std::fflush(stdout);
        if (!t.empty()) results.ours[{model, transport, world}] = std::move(t);
      }
      if (c.peer) {
        results.peer[{model, world}] = run_peer(c, w, world);
      } else {
        results.peer[{model, world}].why = "--no-peer";
      }
    }
  }
  for (const std::string& model : c.models) {
    print_ddp_table(results, model, workload(c, model), c.transports, c.worlds, c.peer_cores);
  }
  return 0;
}
