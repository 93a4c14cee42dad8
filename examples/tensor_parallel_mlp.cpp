// tensor_parallel_mlp: a three-layer MLP split across in-process ranks with the tensor-parallel
// layers (nn::ColumnParallelLinear, nn::RowParallelLinear), trained with plain SGD and checked
// against the same model trained on one rank.
//
//   tensor_parallel_mlp [--ranks N] [--steps S] [--device cpu|cuda]
//                                         (defaults: 2 ranks, 5 steps, cpu; cuda: every rank on
//                                          GPU 0, the collectives device to device)
//
// Layer 1 is column-parallel with its output gathered (gather_output); layer 2 is column-parallel
// and stays split; layer 3 is row-parallel (each rank holds the H/N input columns that match its
// layer-2 slice), its partial products summed by reduce_from_region, then its replicated bias
// added. Every rank holds the same (replicated) loss, which counts once (docs/autodiff.md §10):
// each rank runs backward on it as it is, and every gradient, the replicated bias's included, is
// the one-rank gradient's slice, with no loss / N and no all-reduce written here. Each layer is
// built from the same generator as the one-rank model, so the shards start as its slices.
// Prints the loss per step and exits 0 when every loss and every gathered weight matches the
// single-rank run within the stated tolerance, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/nn/nn.h"
#include "collective/collective.h"
#include "ruccl/config.h"
#include "tensor/tensor.h"
#if RUCCL_WITH_CUDA
#include "cuda/core/device.h"
#endif

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;

namespace {

constexpr std::int64_t kBatch = 32;
constexpr std::int64_t kIn = 8;
constexpr std::int64_t kOut = 4;
constexpr std::uint64_t kInitSeed = 2024;
constexpr double kLr = 0.1;
// F32 training: the tensor-parallel run sums partial products in another order than the
// single-rank matmul, so values differ by float rounding (~1e-7 relative per op). 1e-4 relative
// (plus 1e-5 absolute) leaves ample room for that over a few steps and is far below the change
// one SGD step makes.
constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

void sgd_step(nn::Module& model) {
  for (nn::Param& p : model.parameters()) {
    p.set_value(ruccl::sub(p.value(), ruccl::mul(p.grad(), kLr)));
    p.set_grad(Tensor());
  }
}

// The one-rank model: three Linears drawn from Generator(kInitSeed) in order.
struct Mlp : nn::Cloneable<Mlp> {
  explicit Mlp(std::int64_t hidden, Generator&& gen = Generator(kInitSeed))
      : fc1(register_module("fc1", nn::Linear(kIn, hidden, gen))),
        fc2(register_module("fc2", nn::Linear(hidden, hidden, gen))),
        fc3(register_module("fc3", nn::Linear(hidden, kOut, gen))) {}
  Var forward(const Var& x) override { return fc3(tanh(fc2(tanh(fc1(x))))); }
  nn::ModuleHandle<nn::Linear> fc1, fc2, fc3;
};

// The same model over `comm`, drawn from the same generator: each shard is the one-rank layer's
// slice.
struct TensorParallelMlp : nn::Cloneable<TensorParallelMlp> {
  TensorParallelMlp(std::int64_t hidden, Communicator& comm, Generator&& gen = Generator(kInitSeed))
      : fc1(register_module(
            "fc1", nn::ColumnParallelLinear(kIn, hidden, comm, gen, {.gather_output = true}))),
        fc2(register_module("fc2", nn::ColumnParallelLinear(hidden, hidden, comm, gen))),
        fc3(register_module("fc3", nn::RowParallelLinear(hidden, kOut, comm, gen))) {}
  Var forward(const Var& x) override { return fc3(tanh(fc2(tanh(fc1(x))))); }
  nn::ModuleHandle<nn::ColumnParallelLinear> fc1, fc2;
  nn::ModuleHandle<nn::RowParallelLinear> fc3;
};

struct RankRun {
  std::vector<double> losses;
  std::vector<Tensor> gathered;  // fc1-3 weight and bias reassembled from every rank's shard
};

RankRun train_rank(Communicator& comm, std::int64_t hidden, Device device, const Tensor& x,
                   const Tensor& y, int steps) {
  TensorParallelMlp model(hidden, comm);
  model.to(device);
  RankRun run;
  for (int step = 0; step < steps; ++step) {
    Var loss = mse_loss(model(Var(x)), Var(y));
    loss.backward();  // replicated loss, counted once: no / N, no all-reduce of fc3's bias
    sgd_step(model);
    run.losses.push_back(loss.value().to(Device::cpu()).item<float>());
  }
  NoGradGuard no_grad;
  auto gather = [&](const nn::Param& p, std::int64_t axis) {
    return dc::all_gather_dim(p.var(), axis, comm).value();
  };
  run.gathered = {gather(model.fc1->weight(), 0), gather(model.fc1->bias(), 0),
                  gather(model.fc2->weight(), 0), gather(model.fc2->bias(), 0),
                  gather(model.fc3->weight(), 1), model.fc3->bias().value()};
  return run;
}

bool close(double a, double b) { return std::fabs(a - b) <= kAtol + kRtol * std::fabs(b); }

// Largest |a - b| / (atol + rtol |b|) over the elements (<= 1: within tolerance).
double worst_ratio(const Tensor& a, const Tensor& b) {
  const std::vector<float> av = a.to(Device::cpu()).to_vector<float>();
  const std::vector<float> bv = b.to(Device::cpu()).to_vector<float>();
  double worst = 0.0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    worst = std::max(worst, std::fabs(double(av[i]) - bv[i]) / (kAtol + kRtol * std::fabs(bv[i])));
  }
  return worst;
}

int parse_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

const char* parse_text(int argc, char** argv, const char* flag, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int world = parse_int(argc, argv, "--ranks", 2);
  const int steps = parse_int(argc, argv, "--steps", 5);
  const std::string device_name = parse_text(argc, argv, "--device", "cpu");
  if (world < 1 || world > 64 || steps < 1 || (device_name != "cpu" && device_name != "cuda")) {
    std::fprintf(stderr,
                 "usage: tensor_parallel_mlp [--ranks N (1..64)] [--steps S (>= 1)] "
                 "[--device cpu|cuda]\n");
    return 1;
  }
  const Device device = device_name == "cuda" ? Device::cuda(0) : Device::cpu();
  if (device.is_cuda()) {
#if RUCCL_WITH_CUDA
    const bool usable = cuda::cuda_available() && has_backend(DeviceType::CUDA);
    const std::string why = cuda::cuda_available() ? std::string("this build has no CUDA backend")
                                                   : cuda::device_status();
#else
    const bool usable = false;
    const std::string why = "this build has no CUDA (configure with -DRUCCL_WITH_CUDA=ON)";
#endif
    if (!usable) {
      std::printf("FAIL: --device cuda: %s\n", why.c_str());
      return 1;
    }
  }
  const std::int64_t hidden = 8 * world;  // divisible by the number of ranks
  Generator gen(7);
  const Tensor x_cpu = Tensor::randn({kBatch, kIn}, gen);
  const Tensor y = ruccl::tanh(matmul(x_cpu, Tensor::randn({kIn, kOut}, gen))).to(device);
  const Tensor x = x_cpu.to(device);

  // Reference: the whole model on one rank.
  Mlp ref(hidden);
  ref.to(device);
  std::vector<double> ref_losses;
  for (int step = 0; step < steps; ++step) {
    Var loss = mse_loss(ref(Var(x)), Var(y));
    loss.backward();
    sgd_step(ref);
    ref_losses.push_back(loss.value().to(Device::cpu()).item<float>());
  }
  const std::vector<Tensor> ref_params = {ref.fc1->weight().value(), ref.fc1->bias().value(),
                                          ref.fc2->weight().value(), ref.fc2->bias().value(),
                                          ref.fc3->weight().value(), ref.fc3->bias().value()};

  // Tensor-parallel: one thread per rank.
  std::vector<Communicator> comms =
      InProcessGroup::create(world, std::vector<Device>(static_cast<std::size_t>(world), device));
  std::vector<RankRun> runs(static_cast<std::size_t>(world));
  std::vector<std::string> errors(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      const auto ru = static_cast<std::size_t>(r);
      try {
        runs[ru] = train_rank(comms[ru], hidden, device, x, y, steps);
      } catch (const std::exception& e) {
        errors[ru] = e.what();
        comms[ru].abort(e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    if (!errors[static_cast<std::size_t>(r)].empty()) {
      std::printf("FAIL: rank %d: %s\n", r, errors[static_cast<std::size_t>(r)].c_str());
      return 1;
    }
  }

  bool ok = true;
  std::printf("tensor-parallel MLP %lld -> %lld -> %lld -> %lld on %d ranks (%s), SGD lr %.2f\n",
              static_cast<long long>(kIn), static_cast<long long>(hidden),
              static_cast<long long>(hidden), static_cast<long long>(kOut), world,
              device.to_string().c_str(), kLr);
  std::printf("| step | loss (%d ranks) | loss (1 rank) |\n|---:|---:|---:|\n", world);
  for (int step = 0; step < steps; ++step) {
    const auto su = static_cast<std::size_t>(step);
    std::printf("| %d | %.7f | %.7f |\n", step + 1, runs[0].losses[su], ref_losses[su]);
    for (const RankRun& run : runs) ok = ok && close(run.losses[su], ref_losses[su]);
  }
  const char* names[] = {"fc1.weight", "fc1.bias",   "fc2.weight",
                         "fc2.bias",   "fc3.weight", "fc3.bias"};
  double worst = 0.0;
  for (std::size_t i = 0; i < 6; ++i) {
    const double ratio = worst_ratio(runs[0].gathered[i], ref_params[i]);
    worst = std::max(worst, ratio);
    if (!(ratio <= 1.0)) std::printf("parameter %s differs: ratio %.3g\n", names[i], ratio);
  }
  ok = ok && worst <= 1.0;
  std::printf(
      "%s: losses and gathered weights %s the single-rank run (tolerance %.0e + %.0e * "
      "|ref|; worst weight error %.3g of it)\n",
      ok ? "OK" : "FAIL", ok ? "match" : "do not match", kAtol, kRtol, worst);
  return ok ? 0 : 1;
}
