// One block of train_char_lm's tensor-parallel GPT (examples/train_char_lm/tp_gpt.h's TpBlock:
// LayerNorm, causal ParallelMultiheadAttention, LayerNorm, ColumnParallelLinear fc + GELU,
// RowParallelLinear proj, residuals) forward + backward on a tp group of TP = 1, 2, 4 ranks:
// threads of one process (in-process transport) and ranks that talk TCP on loopback (one thread
// per rank, each with its own TCP transport, shared memory off: the bytes cross the kernel as
// between processes). Per TP: the median step time (rank 0's clock, the max over ranks of each
// step), and the tp group's all-reduces per step (calls and bytes, from Communicator::stats())
// beside Megatron's count (two all-reduces of B·T·E values in forward, two in backward). The
// PyTorch 1.13 peer bench/peers/tp_block_torch.py runs the same block on TP processes over gloo
// in the same run (OPENBLAS_CORETYPE unset, 1 thread per rank). Started by a launcher, each
// process is a rank and TP is the world size (one row; no peer).
//
//   tp_block_bench [--iters N] [--tps 1,2,4] [--batch B] [--seq T] [--embed E] [--heads H]
//                  [--no-peer]
//   ruccl-run --nproc-per-node 2 tp_block_bench [--iters N] ...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/peers_dir.h"
#include "bench/tcp_bench_support.h"
#include "collective/collective.h"
#include "examples/train_char_lm/tp_gpt.h"
#include "tensor/backend/cpu/cpu_backend.h"

using namespace ruccl;
using autodiff::Var;

namespace {

using Clock = std::chrono::steady_clock;

struct Shape4 {
  std::int64_t batch = 8, seq = 64, embed = 64, heads = 4;
};

struct Result {
  double median_ms = 0.0;
  double all_reduces = 0.0;  // per step
  double bytes = 0.0;        // all-reduced per step (one rank's tensor bytes)
};

std::pair<std::uint64_t, std::uint64_t> all_reduce_totals(const Communicator& comm) {
  std::uint64_t calls = 0, bytes = 0;
  for (const CollectiveStatsRow& row : comm.stats().rows()) {
    if (row.op != "all_reduce") continue;
    calls += row.calls;
    bytes += row.bytes;
  }
  return {calls, bytes};
}

// Rank `comm.rank()`'s part of the measurement; rank 0 fills `out`.
void measure(Communicator& comm, const Shape4& s, int iters, Result* out) {
  Generator gen(1);  // every rank the same block (the shards of one), the same input
  examples::char_lm::TpBlock block(s.embed, s.heads, comm, gen);
  const Tensor x = Tensor::randn({s.batch, s.seq, s.embed}, gen);
  auto step = [&] {
    block.zero_grad();
    Var in(x, /*requires_grad=*/true);
    autodiff::sum(block(in)).backward();
  };
  for (int i = 0; i < 2; ++i) step();  // warm-up
  const auto before = all_reduce_totals(comm);
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    comm.barrier();
    const auto t0 = Clock::now();
    step();
    const double mine = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ms.push_back(
        comm.all_reduce(Tensor::from_vector<double>({mine}), ReduceOperation::Max).item<double>());
  }
  const auto after = all_reduce_totals(comm);
  if (comm.rank() != 0) return;
  std::sort(ms.begin(), ms.end());
  out->median_ms = ms[ms.size() / 2];
  // The timing's own Max all-reduces (8 bytes each) are not the block's.
  out->all_reduces = static_cast<double>(after.first - before.first) / iters - 1.0;
  out->bytes = static_cast<double>(after.second - before.second) / iters - 8.0;
}

Result run_threads(int tp, const Shape4& s, int iters) {
  Result r;
  run_ranks(InProcessGroup::create(tp), [&](Communicator& c) { measure(c, s, iters, &r); });
  return r;
}

Result run_tcp(int tp, const Shape4& s, int iters) {
  Result r;
  std::vector<Communicator> comms = bench::loopback_tcp_group(tp, /*shared_memory=*/false);
  std::vector<std::thread> threads;
  for (int i = 0; i < tp; ++i) {
    threads.emplace_back([&, i] { measure(comms[static_cast<std::size_t>(i)], s, iters, &r); });
  }
  for (auto& t : threads) t.join();
  return r;
}

// tp -> median ms from the peer's "case tp=T med_ms=M" lines.
std::map<int, double> run_peer(const std::string& script, const std::string& tps, const Shape4& s,
                               int iters) {
  const std::string cmd =
      "env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
      "/usr/bin/python3 '" +
      script + "' --tps " + tps + " --iters " + std::to_string(iters) + " --batch " +
      std::to_string(s.batch) + " --seq " + std::to_string(s.seq) + " --embed " +
      std::to_string(s.embed) + " --heads " + std::to_string(s.heads);
  std::map<int, double> out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    std::printf("  peer| %s", buf);
    int tp = 0;
    double med = 0.0;
    if (std::sscanf(buf, "case tp=%d med_ms=%lf", &tp, &med) == 2) out[tp] = med;
  }
  pclose(pipe);
  return out;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = text.find(',', at);
    out.push_back(std::atoi(text.substr(at, comma - at).c_str()));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  std::string tps = "1,2,4";
  Shape4 s;
  bool peer = true;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has = i + 1 < argc;
    if (flag == "--iters" && has) {
      iters = std::atoi(argv[++i]);
    } else if (flag == "--tps" && has) {
      tps = argv[++i];
    } else if (flag == "--batch" && has) {
      s.batch = std::atoll(argv[++i]);
    } else if (flag == "--seq" && has) {
      s.seq = std::atoll(argv[++i]);
    } else if (flag == "--embed" && has) {
      s.embed = std::atoll(argv[++i]);
    } else if (flag == "--heads" && has) {
      s.heads = std::atoll(argv[++i]);
    } else if (flag == "--no-peer") {
      peer = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iters N] [--tps 1,2,4] [--batch B] [--seq T] [--embed E] "
                   "[--heads H] [--no-peer]\n",
                   argv[0]);
      return 2;
    }
  }
  cpu::set_num_threads(1);
  if (environment_describes_job()) {  // under ruccl-run (or mpirun): TP = the world, processes
    Communicator comm = Communicator::from_env();
    Result r;
    measure(comm, s, iters, &r);
    if (comm.rank() == 0) {
      std::printf(
          "TP %d processes: median %.3f ms, %.1f all-reduces and %.0f bytes per step "
          "(Megatron: %.0f)\n",
          comm.world_size(), r.median_ms, r.all_reduces, r.bytes,
          comm.world_size() > 1 ? 4.0 * static_cast<double>(s.batch * s.seq * s.embed) * 4 : 0.0);
    }
    return 0;
  }
  const double megatron = 4.0 * static_cast<double>(s.batch * s.seq * s.embed) * 4.0;
  std::printf("# TpBlock forward + backward, B %lld, T %lld, E %lld, %lld heads, F32, %d iters\n",
              static_cast<long long>(s.batch), static_cast<long long>(s.seq),
              static_cast<long long>(s.embed), static_cast<long long>(s.heads), iters);
  std::map<int, double> theirs;
  if (peer) theirs = run_peer(bench::peers_dir() + "/tp_block_torch.py", tps, s, iters);
  std::printf("%-4s %-8s %10s %12s %14s %14s %12s %8s\n", "TP", "ranks", "median_ms", "all_reduces",
              "bytes/step", "megatron_B", "torch_ms", "ratio");
  for (const int tp : parse_list(tps)) {
    for (const char* kind : {"threads", "tcp"}) {
      const Result r =
          std::strcmp(kind, "threads") == 0 ? run_threads(tp, s, iters) : run_tcp(tp, s, iters);
      const double mega = tp > 1 ? megatron : 0.0;
      const auto it = theirs.find(tp);
      const bool peer_row = std::strcmp(kind, "tcp") == 0 && it != theirs.end();
      std::printf("%-4d %-8s %10.3f %12.1f %14.0f %14.0f", tp, kind, r.median_ms, r.all_reduces,
                  r.bytes, mega);
      if (peer_row) {
        std::printf(" %12.3f %8.2f\n", it->second, r.median_ms / it->second);
      } else {
        std::printf(" %12s %8s\n", "-", "-");
      }
    }
  }
}
