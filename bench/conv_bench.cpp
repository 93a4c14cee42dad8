// conv_bench: conv2d forward + backward (d input, d weight, d bias) through the tape, on the
// shapes of a small CNN for 28 x 28 images and of a ResNet-style 3 x 3 block, against PyTorch 1.13
// CPU (oneDNN convolutions) run in the same invocation.
//
//   conv_bench [--iters N] [--threads T] [--peer bench/peers/conv_torch.py | --no-peer]
//              [--profile] [--cpu-time]
//
// --profile also times each stage alone (im2col, the forward GEMM with its layout pass and bias,
// the gradient's layout copy, the two backward GEMMs, col2im, the bias gradient).
// --cpu-time times our side (and the peer's) in process CPU time instead of wall time: on a loaded
// machine the wall time mostly measures the other tenants, the CPU time the work done (with T
// threads it is the sum over the threads).
// Each shape: one warm-up iteration, then N timed (default 5), the median in ms. The peer runs with
// OPENBLAS_CORETYPE unset and the same thread count. "ratio" is PyTorch's time / ours: the
// throughput relative to PyTorch's (>= 1 is faster than PyTorch).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "bench/peers_dir.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/tensor.h"

using namespace ruccl;
using namespace ruccl::autodiff;

namespace {

struct ConvShape {
  const char* name;
  std::int64_t n, c, h, w, o;
};

// The same table as bench/peers/conv_torch.py.
const std::vector<ConvShape> kShapes = {
    {"cnn1", 64, 1, 28, 28, 32},
    {"cnn2", 64, 32, 14, 14, 64},
    {"resnet", 16, 64, 56, 56, 64},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool g_cpu_time = false;  // --cpu-time: process CPU time instead of wall time

/// Now in ms: wall time, or the process's CPU time under --cpu-time.
double now_ms() {
  if (g_cpu_time) {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The median of `iters` timed calls of fn, after one untimed warm-up call (ms).
template <typename Fn>
double median_ms(int iters, const Fn& fn) {
  std::vector<double> times;
  for (int i = 0; i <= iters; ++i) {
    const double start = now_ms();
    fn();
    const double ms = now_ms() - start;
    if (i > 0) times.push_back(ms);
  }
  return median(times);
}

double time_conv(const ConvShape& s, int iters) {
  Generator gen(0);
  const Tensor x0 = Tensor::randn({s.n, s.c, s.h, s.w}, gen);
  const Tensor w0 = ruccl::mul(Tensor::randn({s.o, s.c, 3, 3}, gen), 0.1);
  const Tensor b0 = Tensor::randn({s.o}, gen);
  const Tensor g = Tensor::randn({s.n, s.o, s.h, s.w}, gen);
  return median_ms(iters, [&] {
    Var x(x0, true);
    Var w(w0, true);
    Var b(b0, true);
    Var y = conv2d(x, w, b, {.padding = 1});
    y.backward(g);
  });
}

/// Where the time of one shape goes: each stage of the forward and backward alone (tensor level,
/// median of `iters`), printed as one line.
void profile_conv(const ConvShape& s, int iters) {
  Generator gen(0);
  const Tensor x = Tensor::randn({s.n, s.c, s.h, s.w}, gen);
  const Tensor w = ruccl::mul(Tensor::randn({s.o, s.c, 3, 3}, gen), 0.1);
  const Tensor b = Tensor::randn({s.o}, gen);
  const Tensor g = Tensor::randn({s.n, s.o, s.h, s.w}, gen);
  const Window2d window = conv2d_window(x, w, b, {.padding = 1});
  const auto stage = [&](const auto& fn) { return median_ms(iters, fn); };
  const Tensor cols = im2col(x, window);
  const Tensor rows = conv2d_grad_rows(g, 1);
  const double t_im2col = stage([&] { (void)im2col(x, window); });
  const double t_fwd = stage([&] { (void)conv2d_from_cols(cols, w, b, window, 1); });
  const double t_rows = stage([&] { (void)conv2d_grad_rows(g, 1); });
  const double t_dw = stage([&] { (void)conv2d_weight_grad(rows, cols, w.shape(), 1); });
  const double t_dx = stage([&] { (void)conv2d_input_grad(rows, w, window, 1); });
  const double t_col2im = stage([&] { (void)col2im(cols, window); });
  const double t_db = stage([&] { (void)ruccl::sum(g, {0, 2, 3}); });
  std::printf(
      "# profile %-7s im2col %.2f | fwd gemm+layout+bias %.2f | grad rows %.2f | dW gemm "
      "%.2f | dx gemm+col2im %.2f (col2im alone %.2f) | db %.2f  (ms)\n",
      s.name, t_im2col, t_fwd, t_rows, t_dw, t_dx, t_col2im, t_db);
}

/// name -> median ms from the peer's "conv name=... med_ms=..." lines.
std::map<std::string, double> run_peer(const std::string& script, int threads, int iters) {
  std::map<std::string, double> out;
  const std::string cmd = "env -u OPENBLAS_CORETYPE /usr/bin/python3 '" + script + "' --threads " +
                          std::to_string(threads) + " --iters " + std::to_string(iters) +
                          (g_cpu_time ? " --cpu-time" : "") + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    const std::string line(buf);
    std::printf("  peer| %s", line.c_str());
    const auto name = line.find("name=");
    const auto ms = line.find("med_ms=");
    if (line.rfind("conv ", 0) != 0 || name == std::string::npos || ms == std::string::npos) {
      continue;
    }
    const std::string key = line.substr(name + 5, line.find(' ', name) - name - 5);
    out[key] = std::atof(line.c_str() + ms + 7);
  }
  pclose(pipe);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 5;
  int threads = cpu::num_threads();
  std::string peer = ruccl::bench::peers_dir() + "/conv_torch.py";
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--peer") && i + 1 < argc) {
      peer = argv[++i];
    } else if (!std::strcmp(argv[i], "--no-peer")) {
      peer.clear();
    } else if (!std::strcmp(argv[i], "--profile")) {
      profile = true;
    } else if (!std::strcmp(argv[i], "--cpu-time")) {
      g_cpu_time = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--iters N] [--threads T] [--peer SCRIPT | --no-peer] [--profile] "
                   "[--cpu-time]\n",
                   argv[0]);
      return 2;
    }
  }
  cpu::set_num_threads(threads);
  std::printf(
      "# conv2d 3x3 pad 1, F32, forward + backward (x, weight, bias); %d threads, "
      "median of %d, %s ms\n",
      threads, iters, g_cpu_time ? "process CPU" : "wall");
  std::vector<double> ours;
  for (const ConvShape& s : kShapes) ours.push_back(time_conv(s, iters));
  if (profile) {
    for (const ConvShape& s : kShapes) profile_conv(s, iters);
  }
  std::map<std::string, double> theirs;
  if (!peer.empty()) theirs = run_peer(peer, threads, iters);
  std::printf("%-8s %-22s %10s %12s %8s\n", "shape", "input -> out channels", "ours_ms",
              "pytorch_ms", "ratio");
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    const ConvShape& s = kShapes[i];
    char input[64];
    std::snprintf(input, sizeof input, "[%ld,%ld,%ld,%ld]->%ld", static_cast<long>(s.n),
                  static_cast<long>(s.c), static_cast<long>(s.h), static_cast<long>(s.w),
                  static_cast<long>(s.o));
    const auto it = theirs.find(s.name);
    if (it == theirs.end()) {
      std::printf("%-8s %-22s %10.2f %12s %8s\n", s.name, input, ours[i], "-", "-");
    } else {
      std::printf("%-8s %-22s %10.2f %12.2f %7.2fx\n", s.name, input, ours[i], it->second,
                  it->second / ours[i]);
    }
  }
  return 0;
}
