// tensor_parallel_mlp: a three-layer MLP split across in-process ranks with the differentiable
// collectives (tensor parallelism), trained with plain SGD and checked against the same model
// trained on one rank.
//
//   tensor_parallel_mlp [--ranks N] [--steps S] [--device cpu|cuda]
//                                         (defaults: 2 ranks, 5 steps, cpu; cuda: every rank on
//                                          GPU 0, the collectives device to device)
//
// Layer 1 is column-parallel (each rank holds H/N output rows of W1) and its activations are
// gathered with all_gather_dim; layer 2 is column-parallel and stays split; layer 3 is
// row-parallel (each rank holds the H/N input columns of W3 that match its layer-2 slice) and the
// partial products are summed with all_reduce_sum. Every rank then holds the same (replicated)
// loss, so under the sum-of-per-rank-losses convention each rank runs backward on loss / N; the
// replicated output bias b3 then holds 1/N of its gradient on each rank, which an all_reduce_sum
// restores. Prints the loss per step and exits 0 when every loss and every gathered weight matches
// the single-rank run within the stated tolerance, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
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
constexpr double kLr = 0.1;
// F32 training: the tensor-parallel run sums partial products in another order than the
// single-rank matmul, so values differ by float rounding (~1e-7 relative per op). 1e-4 relative
// (plus 1e-5 absolute) leaves ample room for that over a few steps and is far below the change
// one SGD step makes.
constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

// The six parameter tensors in order: w1 [H, in], b1 [H], w2 [H, H], b2 [H], w3 [out, H], b3.
using Params = std::vector<Tensor>;

Params init_params(std::int64_t hidden, Generator& gen) {
  auto uniform = [&](const Shape& s, std::int64_t fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return ruccl::sub(ruccl::mul(Tensor::rand(s, gen), 2.0 * bound), bound);
  };
  return {uniform({hidden, kIn}, kIn),       uniform({hidden}, kIn),
          uniform({hidden, hidden}, hidden), uniform({hidden}, hidden),
          uniform({kOut, hidden}, hidden),   uniform({kOut}, hidden)};
}

// Rank r's shard of the full parameters (contiguous copies).
Params shard(const Params& p, int r, int world) {
  const std::int64_t s = p[0].size(0) / world;
  return {p[0].narrow(0, r * s, s).clone(), p[1].narrow(0, r * s, s).clone(),
          p[2].narrow(0, r * s, s).clone(), p[3].narrow(0, r * s, s).clone(),
          p[4].narrow(1, r * s, s).clone(), p[5].clone()};
}

std::vector<Var> leaves(const Params& p) {
  std::vector<Var> out;
  for (const Tensor& t : p) out.emplace_back(t, true);
  return out;
}

void sgd_step(std::vector<Var>& params) {
  for (Var& v : params) {
    v.set_value(ruccl::sub(v.value(), ruccl::mul(v.grad(), kLr)));
    v.zero_grad();
  }
}

Var full_forward(const Var& x, const std::vector<Var>& p) {
  Var h1 = tanh(linear(x, p[0], p[1]));
  Var h2 = tanh(linear(h1, p[2], p[3]));
  return linear(h2, p[4], p[5]);
}

Var parallel_forward(Communicator& comm, const Var& x, const std::vector<Var>& p) {
  Var h1 = dc::all_gather_dim(tanh(linear(x, p[0], p[1])), -1, comm);  // column-parallel
  Var h2 = tanh(linear(h1, p[2], p[3]));                               // column-parallel
  return dc::all_reduce_sum(linear(h2, p[4]), comm) + p[5];            // row-parallel
}

struct RankRun {
  std::vector<double> losses;
  Params gathered;  // the full parameters reassembled from every rank's shard (rank 0)
};

RankRun train_rank(Communicator& comm, const Params& init, const Tensor& x, const Tensor& y,
                   int steps) {
  const int world = comm.world_size();
  std::vector<Var> p = leaves(shard(init, comm.rank(), world));
  RankRun run;
  for (int step = 0; step < steps; ++step) {
    Var loss = mse_loss(parallel_forward(comm, Var(x), p), Var(y));
    (loss / static_cast<double>(world)).backward();  // the loss is replicated: see the top
    p[5].set_grad(comm.all_reduce(p[5].grad(), ReduceOperation::Sum));
    sgd_step(p);
    run.losses.push_back(loss.value().to(Device::cpu()).item<float>());
  }
  NoGradGuard no_grad;
  run.gathered = {dc::all_gather(p[0], comm).value(),        dc::all_gather(p[1], comm).value(),
                  dc::all_gather(p[2], comm).value(),        dc::all_gather(p[3], comm).value(),
                  dc::all_gather_dim(p[4], 1, comm).value(), p[5].value()};
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
  Generator gen(2024);
  Params init = init_params(hidden, gen);  // drawn on the CPU (the same values on every device)
  for (Tensor& p : init) p = p.to(device);
  const Tensor x_cpu = Tensor::randn({kBatch, kIn}, gen);
  const Tensor y = ruccl::tanh(matmul(x_cpu, Tensor::randn({kIn, kOut}, gen))).to(device);
  const Tensor x = x_cpu.to(device);

  // Reference: the whole model on one rank.
  std::vector<Var> ref = leaves(init);
  std::vector<double> ref_losses;
  for (int step = 0; step < steps; ++step) {
    Var loss = mse_loss(full_forward(Var(x), ref), Var(y));
    loss.backward();
    sgd_step(ref);
    ref_losses.push_back(loss.value().to(Device::cpu()).item<float>());
  }

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
        runs[ru] = train_rank(comms[ru], init, x, y, steps);
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
  const char* names[] = {"w1", "b1", "w2", "b2", "w3", "b3"};
  double worst = 0.0;
  for (std::size_t i = 0; i < 6; ++i) {
    const double ratio = worst_ratio(runs[0].gathered[i], ref[i].value());
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
