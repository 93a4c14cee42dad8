// model_step_bench: the models people write, timed a step at a time against PyTorch 1.13 CPU in
// the same run (bench/peers/model_step_torch.py, the same shapes):
//   attn T=128, T=512  the char LM's pre-LN block (examples/train_char_lm/gpt.h: LayerNorm, causal
//                      MultiheadAttention + residual, LayerNorm, GELU MLP + residual), batch 8,
//                      embed 128, 4 heads: forward + backward (d input and every parameter) of
//                      [8, T, 128]; PyTorch's is nn.MultiheadAttention (1.13: the plain
//                      composition, no fused attention)
//   cnn step           train_fashion_mnist --model cnn's net (fashion_mnist.h make_cnn), batch
//                      128 of [128, 784]: forward, cross-entropy, backward, Adam step
//   lm step            train_char_lm's GPT (default sizes: 2 blocks, embed 64, 4 heads, context
//                      64, tied head; vocabulary 96), batch 16: forward, cross-entropy, backward,
//                      AdamW step
//
//   model_step_bench [--iters N] [--threads T] [--peer SCRIPT | --no-peer] [--only NAME]
//
// Each case: two warm-up iterations, then N timed (default 5); the medians in ms of the wall-clock
// time and of the process's CPU time (all threads: on a loaded machine, where a process waits for
// a core most of the time, the figure that still compares). Inputs are fixed
// random draws (the time does not depend on the values). The peer runs with the same thread count
// and bench::openblas_core()'s OPENBLAS_CORETYPE (SkylakeX on an AVX-512 CPU: Debian's torch does
// its GEMMs in OpenBLAS, which would otherwise fall back to SSE3 kernels here; its convolutions
// are oneDNN's either way). "ratio" is ours / PyTorch's time (<= 1.0: as fast as PyTorch or
// faster).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "autodiff/nn/loss.h"
#include "bench/peers_dir.h"
#include "examples/train_char_lm/gpt.h"
#include "examples/train_fashion_mnist/fashion_mnist.h"
#include "optim/adam.h"
#include "optim/gradients_params.h"
#include "tensor/backend/cpu/cpu_backend.h"

using namespace ruccl;
using autodiff::Var;

namespace {

struct Case {
  std::string name;
  std::function<void()> step;  // one timed iteration
};

/// CPU time of this process, all threads (ms).
double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

/// Medians (ms) of one case: wall-clock and this process's CPU time.
struct Timing {
  double wall = 0.0;
  double cpu = 0.0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The medians of `iters` timed calls of fn, after two untimed warm-up calls.
Timing time_case(int iters, const std::function<void()>& fn) {
  std::vector<double> walls, cpus;
  for (int i = 0; i < iters + 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_ms();
    fn();
    const double cpu = cpu_ms() - cpu_start;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= 2) {
      walls.push_back(ms);
      cpus.push_back(cpu);
    }
  }
  return {median(walls), median(cpus)};
}

/// `n` labels drawn uniformly from [0, classes).
Tensor random_labels(std::int64_t n, std::int64_t classes, Generator& gen) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) {
    v.push_back(static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(classes))));
  }
  return Tensor::from_vector(v, {n});
}

/// The attention block forward + backward on [batch, t, embed].
Case attention_case(std::int64_t t) {
  constexpr std::int64_t kBatch = 8, kEmbed = 128, kHeads = 4;
  Generator gen(1);
  auto block = std::make_shared<examples::char_lm::Block>(kEmbed, kHeads, gen);
  const Tensor x = Tensor::randn({kBatch, t, kEmbed}, gen);
  const Tensor g = Tensor::randn({kBatch, t, kEmbed}, gen);
  return {"attn T=" + std::to_string(t), [block, x, g] {
            block->zero_grad();
            const Var xv(x, /*requires_grad=*/true);
            block->forward(xv).backward(g);
          }};
}

/// The CNN's training step, batch 128.
Case cnn_case() {
  constexpr std::int64_t kBatch = 128;
  auto model = examples::fashion_mnist::make_cnn(10, 0);
  Generator gen(2);
  const Tensor x = Tensor::rand({kBatch, 784}, gen);
  const Tensor y = random_labels(kBatch, 10, gen);
  auto opt = std::make_shared<optim::Adam>();
  return {"cnn step", [model, opt, x, y] {
            model->zero_grad();
            nn::cross_entropy(model->forward(Var(x)), y).backward();
            opt->step(1e-3, *model, optim::GradientsParams::from_module(*model));
          }};
}

/// The char LM's training step, batch 16.
Case lm_case() {
  constexpr std::int64_t kBatch = 16, kVocab = 96;
  Generator gen(3);
  const examples::char_lm::GptConfig config{.vocab = kVocab};
  auto model = std::make_shared<examples::char_lm::Gpt>(config, gen);
  const Tensor x =
      random_labels(kBatch * config.context, kVocab, gen).reshape({kBatch, config.context});
  const Tensor y = random_labels(kBatch * config.context, kVocab, gen);
  auto opt = std::make_shared<optim::AdamW>(optim::AdamWOptions{.weight_decay = 0.01});
  return {"lm step", [model, opt, x, y, kVocab] {
            model->zero_grad();
            const Var logits = autodiff::reshape(model->forward(x), {-1, kVocab});
            nn::cross_entropy(logits, y).backward();
            opt->step(2e-3, *model, optim::GradientsParams::from_module(*model));
          }};
}

/// name -> medians from the peer's "case name=NAME threads=T med_ms=W cpu_ms=C" lines.
std::map<std::string, Timing> run_peer(const std::string& script, int threads, int iters,
                                       const std::string& only) {
  const std::string core = bench::openblas_core();
  const std::string t = std::to_string(threads);  // OpenBLAS's own pool too, not only ATen's
  std::string cmd =
      (core == "default" ? "env -u OPENBLAS_CORETYPE" : "env OPENBLAS_CORETYPE=" + core) +
      " OPENBLAS_NUM_THREADS=" + t + " OMP_NUM_THREADS=" + t + " /usr/bin/python3 '" + script +
      "' --threads " + t + " --iters " + std::to_string(iters);
  if (!only.empty()) cmd += " --only '" + only + "'";
  std::map<std::string, Timing> out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    const std::string line = buf;
    std::printf("  peer| %s", line.c_str());
    const auto name_at = line.find("name=");
    const auto ms_at = line.find("med_ms=");
    const auto cpu_at = line.find("cpu_ms=");
    if (line.rfind("case ", 0) != 0 || name_at == std::string::npos || ms_at == std::string::npos ||
        cpu_at == std::string::npos)
      continue;
    const auto name_end = line.find(" threads=", name_at);
    out[line.substr(name_at + 5, name_end - name_at - 5)] = {std::atof(line.c_str() + ms_at + 7),
                                                             std::atof(line.c_str() + cpu_at + 7)};
  }
  pclose(pipe);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 5;
  int threads = 1;
  std::string only;
  std::string peer = bench::peers_dir() + "/model_step_torch.py";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--peer") && i + 1 < argc) {
      peer = argv[++i];
    } else if (!std::strcmp(argv[i], "--no-peer")) {
      peer.clear();
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iters N] [--threads T] [--peer SCRIPT | --no-peer] "
                   "[--only attn|cnn|lm]\n",
                   argv[0]);
      return 2;
    }
  }
  if (iters < 1) iters = 1;
  cpu::set_num_threads(threads);
  std::vector<std::function<Case()>> makers = {
      [] { return attention_case(128); }, [] { return attention_case(512); }, cnn_case, lm_case};
  std::map<std::string, Timing> ours;
  std::vector<std::string> order;
  for (const auto& make : makers) {
    const Case c = make();
    if (!only.empty() && c.name.rfind(only, 0) != 0) continue;
    ours[c.name] = time_case(iters, c.step);
    order.push_back(c.name);
    std::printf("  ours| case name=%s threads=%d med_ms=%.3f cpu_ms=%.3f\n", c.name.c_str(),
                threads, ours[c.name].wall, ours[c.name].cpu);
    std::fflush(stdout);
  }
  std::map<std::string, Timing> theirs;
  if (!peer.empty()) theirs = run_peer(peer, threads, iters, only);
  std::printf("\n%-12s %7s %10s %10s %7s %10s %10s %7s\n", "case", "threads", "ours ms", "torch ms",
              "ratio", "ours cpu", "torch cpu", "ratio");
  for (const std::string& name : order) {
    const Timing& o = ours[name];
    const auto it = theirs.find(name);
    if (it == theirs.end()) {
      std::printf("%-12s %7d %10.2f %10s %7s %10.2f %10s %7s\n", name.c_str(), threads, o.wall, "-",
                  "-", o.cpu, "-", "-");
    } else {
      const Timing& t = it->second;
      std::printf("%-12s %7d %10.2f %10.2f %7.2f %10.2f %10.2f %7.2f\n", name.c_str(), threads,
                  o.wall, t.wall, o.wall / t.wall, o.cpu, t.cpu, o.cpu / t.cpu);
    }
  }
  return 0;
}
