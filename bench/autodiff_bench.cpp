// autodiff_bench: the training step of an MLP and the tape's per-op overhead, beside PyTorch.
//
//   autodiff_bench [--peer bench/peers/mlp_train_torch.py] [--steps N]
//   bash bench/run_autodiff_bench.sh [BUILD_DIR]   (passes the peer when python3-torch is there)
//
// 1. MLP 784-512-512-10, ReLU, cross-entropy (mean), batch 128, float32, SGD with momentum 0.9
//    (lr 0.01, written by hand here), 16 fixed random batches cycled: ms per step (zero_grad +
//    forward + loss + backward + update), median / p10 / p90 over N steps after 20 warm-up steps,
//    with 1 and 2 CPU threads (ruccl::cpu::set_num_threads).
// 2. Tiny ops: x (16 floats, requires grad) -> 1,000 ops alternating x * 1.0001 and x + 0.001 ->
//    sum -> backward; µs per op for the recording forward, the backward, both, and the forward
//    under NoGradGuard (pure tensor dispatch); median of 30 repetitions after 5 warm-up.
// With --peer the PyTorch script runs in the same process tree afterwards (on an AVX-512 CPU with
// OpenBLAS's SkylakeX core type, the fair configuration: peers_dir.h) and the ratios ours /
// PyTorch are printed.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "bench/peers_dir.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/tensor.h"

using namespace ruccl;
using namespace ruccl::autodiff;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Stats {
  double median, p10, p90;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() / 10], v[v.size() * 9 / 10]};
}

struct MlpResult {
  Stats ms;
  double loss0, loss_last;
};

MlpResult run_mlp(int threads, int steps) {
  cpu::set_num_threads(threads);
  constexpr int kBatch = 128;
  constexpr int kWarm = 20;
  Generator gen(0);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(784, 512, gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(512, 512, gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(512, 10, gen)});
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 16; ++i) {
    xs.push_back(Tensor::randn({kBatch, 784}, gen));
    std::vector<std::int64_t> labels(kBatch);
    for (auto& l : labels) l = static_cast<std::int64_t>(gen.next_below(10));
    ys.push_back(Tensor::from_vector<std::int64_t>(labels));
  }
  std::vector<nn::Param> params = model->parameters();
  std::vector<Tensor> momentum(params.size());
  const double lr = 0.01, mu = 0.9;
  std::vector<double> times;
  MlpResult r{};
  for (int i = 0; i < kWarm + steps; ++i) {
    const Clock::time_point t0 = Clock::now();
    model->zero_grad();
    Var loss = cross_entropy(model->forward(Var(xs[i % 16])), ys[i % 16]);
    loss.backward();
    for (std::size_t p = 0; p < params.size(); ++p) {
      // torch.optim.SGD's update (dampening 0), fused and in place like its foreach kernels:
      // buf = mu * buf + g (buf = g on the first step); w -= lr * buf.
      const Tensor& g = params[p].grad();
      if (!momentum[p].defined()) momentum[p] = Tensor::zeros(g.shape());
      float* w = params[p].value().data<float>();
      float* buf = momentum[p].data<float>();
      const float* gp = g.data<float>();
      const float m = i == 0 ? 0.0f : static_cast<float>(mu);
      for (std::int64_t k = 0, n = g.numel(); k < n; ++k) {
        buf[k] = m * buf[k] + gp[k];
        w[k] -= static_cast<float>(lr) * buf[k];
      }
    }
    const double dt = seconds_since(t0);
    const double l = loss.value().item<float>();
    if (i == 0) r.loss0 = l;
    r.loss_last = l;
    if (i >= kWarm) times.push_back(dt * 1e3);
  }
  r.ms = stats(times);
  return r;
}

// The step's eight matrix products alone, with the layouts linear() uses (forward x @ W^T,
// backward g @ W and g^T @ x): the floor set by the tensor layer's GEMM.
Stats run_gemm_floor(int threads, int steps) {
  cpu::set_num_threads(threads);
  Generator gen(2);
  const std::int64_t b = 128;
  const std::array<std::int64_t, 4> sizes{784, 512, 512, 10};
  std::vector<Tensor> ws, acts, grads;
  for (int l = 0; l < 3; ++l) {
    ws.push_back(Tensor::randn({sizes[l + 1], sizes[l]}, gen));
    acts.push_back(Tensor::randn({b, sizes[l]}, gen));
    grads.push_back(Tensor::randn({b, sizes[l + 1]}, gen));
  }
  std::vector<double> times;
  for (int i = 0; i < 20 + steps; ++i) {
    const Clock::time_point t0 = Clock::now();
    for (int l = 0; l < 3; ++l) {
      (void)ruccl::matmul(acts[l], ws[l].transpose(0, 1));     // forward
      (void)ruccl::matmul(grads[l].transpose(0, 1), acts[l]);  // d weight
      if (l > 0) (void)ruccl::matmul(grads[l], ws[l]);         // d input
    }
    if (i >= 20) times.push_back(seconds_since(t0) * 1e3);
  }
  return stats(times);
}

struct TinyResult {
  double fwd, bwd, nograd;  // µs per op
};

TinyResult run_tiny() {
  cpu::set_num_threads(1);
  constexpr int kOps = 1000;
  Generator gen(1);
  auto chain = [](Var y) {
    for (int k = 0; k < kOps; ++k) y = (k % 2 == 0) ? mul(y, 1.0001) : add(y, 0.001);
    return y;
  };
  std::vector<double> fw, bw, ng;
  for (int rep = 0; rep < 35; ++rep) {
    Var x(Tensor::randn({16}, gen), true);
    Clock::time_point t0 = Clock::now();
    Var y = sum(chain(x));
    const double f = seconds_since(t0);
    t0 = Clock::now();
    y.backward();
    const double b = seconds_since(t0);
    double n;
    {
      NoGradGuard guard;
      t0 = Clock::now();
      Var z = chain(x);
      n = seconds_since(t0);
    }
    if (rep >= 5) {
      fw.push_back(f);
      bw.push_back(b);
      ng.push_back(n);
    }
  }
  const double per_op = 1e6 / kOps;
  return {stats(fw).median * per_op, stats(bw).median * per_op, stats(ng).median * per_op};
}

// "key=value" from a line of the peer's output.
std::optional<double> field(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(key + "=");
  if (at == std::string::npos) return std::nullopt;
  return std::stod(line.substr(at + key.size() + 1));
}

struct Peer {
  std::optional<double> mlp1, mlp2, tiny;
  std::string mlp2_config;
};

Peer run_peer(const std::string& script) {
  Peer peer;
  const std::string cmd =
      "/usr/bin/python3 '" + script + "' --cores " + ruccl::bench::openblas_core() + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return peer;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) {
    const std::string line(buf.data());
    std::printf("  peer| %s", line.c_str());
    const bool one = line.find("torch_thr=1 blas_thr=1 ") != std::string::npos;
    const bool two_cores = line.find("blas_thr=2 ") != std::string::npos;
    if (line.rfind("mlp", 0) == 0) {
      const std::optional<double> ms = field(line, "med_ms");
      if (!ms) continue;
      if (one) peer.mlp1 = ms;
      // The fair 2-core figure is PyTorch's best 2-core configuration.
      if (two_cores && (!peer.mlp2 || *ms < *peer.mlp2)) {
        peer.mlp2 = ms;
        peer.mlp2_config = line.substr(5, line.find(" core=") - 5);
      }
    } else if (line.rfind("tiny", 0) == 0 && one) {
      peer.tiny = field(line, "fwd+bwd_us/op");
    }
  }
  pclose(pipe);
  return peer;
}

std::string ratio(double ours, const std::optional<double>& peer) {
  if (!peer) return "-";
  std::ostringstream out;
  out.precision(2);
  out << std::fixed << ours / *peer << "x";
  return out.str();
}

std::string num(const std::optional<double>& v) {
  if (!v) return "-";
  std::ostringstream out;
  out.precision(2);
  out << std::fixed << *v;
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string peer_script;
  int steps = 200;
  bool profile_mlp = false;
  int profile_threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--peer") && i + 1 < argc) {
      peer_script = argv[++i];
    } else if (!std::strcmp(argv[i], "--profile-mlp")) {
      profile_mlp = true;  // one config only, for perf or valgrind --tool=callgrind
      if (i + 1 < argc && std::isdigit(static_cast<unsigned char>(argv[i + 1][0]))) {
        profile_threads = std::atoi(argv[++i]);
      }
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::max(10, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--peer mlp_train_torch.py] [--steps N] [--profile-mlp [THREADS]]\n",
                   argv[0]);
      return 2;
    }
  }
  std::printf("# autodiff_bench: MLP 784-512-512-10 batch 128 CE + SGD(m=0.9), float32; %d steps\n",
              steps);
  if (profile_mlp) {
    const MlpResult m = run_mlp(profile_threads, steps);
    std::printf("mlp threads=%d med_ms=%.3f\n", profile_threads, m.ms.median);
    return 0;
  }
  const MlpResult m1 = run_mlp(1, steps);
  std::printf("ours mlp threads=1 med_ms=%.3f p10=%.3f p90=%.3f loss0=%.4f loss_last=%.4f\n",
              m1.ms.median, m1.ms.p10, m1.ms.p90, m1.loss0, m1.loss_last);
  const MlpResult m2 = run_mlp(2, steps);
  std::printf("ours mlp threads=2 med_ms=%.3f p10=%.3f p90=%.3f loss0=%.4f loss_last=%.4f\n",
              m2.ms.median, m2.ms.p10, m2.ms.p90, m2.loss0, m2.loss_last);
  const Stats g1 = run_gemm_floor(1, steps);
  const Stats g2 = run_gemm_floor(2, steps);
  std::printf(
      "ours gemm-only (8 matmuls of the step) threads=1 med_ms=%.3f p10=%.3f; threads=2 "
      "med_ms=%.3f p10=%.3f\n",
      g1.median, g1.p10, g2.median, g2.p10);
  const TinyResult t = run_tiny();
  std::printf(
      "ours tiny fwd_graph_us/op=%.3f bwd_us/op=%.3f fwd+bwd_us/op=%.3f "
      "nograd_fwd_us/op=%.3f\n",
      t.fwd, t.bwd, t.fwd + t.bwd, t.nograd);

  Peer peer;
  if (!peer_script.empty()) {
    std::printf("# PyTorch peer: %s (OPENBLAS_CORETYPE=%s)\n", peer_script.c_str(),
                ruccl::bench::openblas_core().c_str());
    std::fflush(stdout);
    peer = run_peer(peer_script);
  }
  std::printf("\n| figure (median) | ruCCL | PyTorch | ratio |\n|---|---:|---:|---:|\n");
  std::printf("| MLP step, 1 thread (ms) | %.2f | %s | %s |\n", m1.ms.median,
              num(peer.mlp1).c_str(), ratio(m1.ms.median, peer.mlp1).c_str());
  std::printf("| MLP step, 2 threads (ms) | %.2f | %s%s | %s |\n", m2.ms.median,
              num(peer.mlp2).c_str(),
              peer.mlp2_config.empty() ? "" : (" (" + peer.mlp2_config + ")").c_str(),
              ratio(m2.ms.median, peer.mlp2).c_str());
  std::printf("| (matmuls alone, 1 / 2 threads, ms) | %.2f / %.2f | | |\n", g1.median, g2.median);
  std::printf("| tiny op fwd+bwd (us/op) | %.3f | %s | %s |\n", t.fwd + t.bwd,
              num(peer.tiny).c_str(), ratio(t.fwd + t.bwd, peer.tiny).c_str());
  return 0;
}
