// One rank of bench/ddp_bench (see ddp_worker.h).
//
// Protocol, every mode the same: 16 fixed random batches per rank (x ~ N(0, 1), labels uniform),
// a step = zero_grad + forward + cross-entropy (sum over the batch, weight = batch) + backward
// (+ the reduction of the mode) + SGD (lr 0.01, momentum 0.9). The modes take turns, `rounds`
// times, each turn steps / rounds timed steps after a barrier (`warmup` untimed ones before the
// first turn of each mode), so that every mode sees the same share of a shared machine's load;
// a step's time is the maximum over the ranks (an elementwise all_reduce Max of the per-step
// times at the end); median, p10, p90 over every timed step of every turn. Compute-only ranks
// never wait for each other, so their steps of one index do not happen together: there the
// figures are the slowest rank's own median, p10 and p90.
//
// The communication of the plain step is the time spent in DataParallel::reduce, the minimum
// over the ranks per step (the rank that arrived last waited for nobody: its time is the
// exchange itself, not a wait for a slower rank), median over the steps.
#include "bench/ddp/ddp_worker.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "collective/trace/call_trace.h"
#include "optim/bucket_plan.h"
#include "optim/data_parallel.h"
#include "optim/sgd.h"

namespace ruccl::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::int64_t> widths(const std::string& name) {
  if (name == "mlp") return {784, 512, 512, 10};
  if (name == "wide") return {784, 2048, 2048, 10};
  throw std::invalid_argument("ddp_bench: expected model mlp or wide, got '" + name + "'");
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The slowest (Max) or fastest (Min) rank's time of every step, sorted.
std::vector<double> over_ranks(Communicator& comm, const std::vector<double>& times,
                               ReduceOperation op) {
  std::vector<double> v = comm.all_reduce(Tensor::from_vector(times), op).to_vector<double>();
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::shared_ptr<nn::Sequential> make_ddp_model(const std::string& name) {
  const std::vector<std::int64_t> w = widths(name);
  Generator gen(0);
  std::vector<std::shared_ptr<nn::Module>> layers;
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    if (i > 0) layers.push_back(std::make_shared<nn::ReLU>());
    layers.push_back(std::make_shared<nn::Linear>(w[i], w[i + 1], gen));
  }
  auto model = std::make_shared<nn::Sequential>(layers);
  model->assign_param_ids(1);
  return model;
}

std::string ddp_model_text(const std::string& name) {
  std::string text;
  for (std::int64_t w : widths(name)) {
    if (!text.empty()) text += '-';
    text += std::to_string(w);
  }
  return text;
}

std::int64_t ddp_model_gradient_bytes(const std::string& name) {
  const std::vector<std::int64_t> w = widths(name);
  std::int64_t n = 0;
  for (std::size_t i = 0; i + 1 < w.size(); ++i) n += w[i] * w[i + 1] + w[i + 1];
  return 4 * n;
}

std::vector<DdpModeSpec> ddp_modes(std::int64_t small_cap) {
  return {{"compute-only", DdpMode::ComputeOnly},
          {"plain", DdpMode::Plain},
          {"overlapped", DdpMode::Overlapped},
          {"overlapped small", DdpMode::Overlapped, small_cap, small_cap}};
}

std::vector<DdpModeTiming> run_ddp_rank(Communicator comm, const DdpWorkload& work) {
  const int rank = comm.rank();
  auto model = make_ddp_model(work.model);
  std::vector<optim::DataParallel> dps;
  std::vector<int> buckets;
  for (const DdpModeSpec& m : work.modes) {
    const optim::DataParallelOptions options{.overlap = m.mode == DdpMode::Overlapped,
                                             .bucket_cap_bytes = m.bucket_cap_bytes,
                                             .first_bucket_cap_bytes = m.first_bucket_cap_bytes};
    dps.push_back(optim::DataParallel::initialize(comm, *model, 0, options));
    const optim::BucketPlanOptions caps{m.bucket_cap_bytes, m.first_bucket_cap_bytes};
    buckets.push_back(static_cast<int>(optim::BucketPlan::of(*model, caps).buckets().size()));
  }
  optim::Sgd sgd({.momentum = 0.9});
  Generator gen(1000 + static_cast<std::uint64_t>(rank));
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 16; ++i) {
    xs.push_back(Tensor::randn({work.batch, 784}, gen));
    std::vector<std::int64_t> labels(static_cast<std::size_t>(work.batch));
    for (auto& l : labels) l = static_cast<std::int64_t>(gen.next_below(10));
    ys.push_back(Tensor::from_vector<std::int64_t>(labels));
  }
  const auto weight = static_cast<double>(work.batch);
  TraceRecorder& trace = comm.trace();
  std::vector<std::vector<double>> times(work.modes.size()), comm_times(work.modes.size());
  std::vector<double> losses(work.modes.size());
  const int per_round = std::max(1, work.steps / std::max(1, work.rounds));
  int batch = 0;
  for (int round = 0; round < work.rounds; ++round) {
    for (std::size_t m = 0; m < work.modes.size(); ++m) {
      const DdpMode mode = work.modes[m].mode;
      optim::DataParallel& dp = dps[m];
      comm.barrier();
      const int untimed = round == 0 ? work.warmup : 0;
      for (int i = 0; i < untimed + per_round; ++i, ++batch) {
        const auto start = Clock::now();
        double reduce_s = 0;
        const TraceSpan step(trace, "step");
        model->zero_grad();
        autodiff::Var loss;
        {
          const TraceSpan span(trace, "forward");
          loss = nn::cross_entropy(model->forward(autodiff::Var(xs[batch % 16])), ys[batch % 16],
                                   nn::Reduction::Sum);
        }
        optim::GradientsParams g;
        if (mode == DdpMode::Overlapped) {
          const TraceSpan span(trace, "backward (buckets reduced during it)");
          g = dp.backward(*model, loss, weight, optim::LossReduction::Sum);
        } else {
          {
            const TraceSpan span(trace, "backward");
            loss.backward();
          }
          g = optim::GradientsParams::from_module(*model);
          if (mode == DdpMode::Plain) {
            const auto reduce_start = Clock::now();
            g = dp.reduce(*model, g, weight, optim::LossReduction::Sum);
            reduce_s = seconds_since(reduce_start);
          } else {  // the division reduce would do, so the updates have the same size
            for (const auto& [id, grad] : g.entries()) Tensor(grad).div_(weight);  // shared
          }
        }
        {
          const TraceSpan span(trace, "optimizer");
          sgd.step(0.01, *model, g);
        }
        if (i >= untimed) {
          times[m].push_back(seconds_since(start));
          comm_times[m].push_back(reduce_s);
        }
        losses[m] = loss.value().item<float>() / weight;
      }
    }
  }
  std::vector<DdpModeTiming> out(work.modes.size());
  for (std::size_t m = 0; m < work.modes.size(); ++m) {
    const std::vector<double> exchange = over_ranks(comm, comm_times[m], ReduceOperation::Min);
    DdpModeTiming& t = out[m];
    std::vector<double> figures;  // median, p10, p90 in ms
    if (work.modes[m].mode == DdpMode::ComputeOnly) {
      // The ranks never wait for each other, so step i of one rank and step i of another happen
      // at different times: the slowest rank's own median, p10 and p90.
      std::vector<double> own = times[m];
      std::sort(own.begin(), own.end());
      figures = {own[own.size() / 2], own[own.size() / 10], own[own.size() * 9 / 10]};
      figures =
          comm.all_reduce(Tensor::from_vector(figures), ReduceOperation::Max).to_vector<double>();
    } else {
      const std::vector<double> step = over_ranks(comm, times[m], ReduceOperation::Max);
      figures = {step[step.size() / 2], step[step.size() / 10], step[step.size() * 9 / 10]};
    }
    t.median_ms = 1e3 * figures[0];
    t.p10_ms = 1e3 * figures[1];
    t.p90_ms = 1e3 * figures[2];
    t.comm_ms = 1e3 * exchange[exchange.size() / 2];
    t.buckets = work.modes[m].mode == DdpMode::Overlapped ? buckets[m] : 0;
    t.last_loss = comm.all_reduce(Tensor::from_vector<double>({losses[m]}), ReduceOperation::Mean)
                      .item<double>();
  }
  comm.barrier();
  return out;
}

}  // namespace ruccl::bench
