#include "bench/sim/sim_runs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "collective/algorithms/selection.h"

namespace ruccl::bench {

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> out;
  for (int a = 0; algorithm_name(static_cast<Algorithm>(a)) != nullptr; ++a) {
    out.push_back(static_cast<Algorithm>(a));
  }
  return out;
}

std::vector<double> simulate_all_reduces(int world, const LinkModel& model,
                                         const std::vector<SimCall>& calls) {
  std::size_t largest = 0;
  for (const SimCall& c : calls) largest = std::max(largest, c.bytes);
  // One input shared by every rank: timing mode reads no payload, so it is never touched.
  const Tensor input =
      Tensor::empty({static_cast<std::int64_t>(largest / sizeof(float))}, DType::F32);
  CommunicatorOptions options;
  options.timeout = std::chrono::hours(1);          // wall-clock: a 1024-rank ring runs for seconds
  options.determinism = Determinism::PerAlgorithm;  // HalvingDoubling runs too
  SimGroup group = SimGroup::create(world, model, SimMode::Timing, options);
  const std::size_t n = calls.size();
  std::vector<std::vector<double>> start(static_cast<std::size_t>(world), std::vector<double>(n));
  std::vector<std::vector<double>> end = start;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Communicator comm = std::move(group.communicators[static_cast<std::size_t>(r)]);
      const auto i = static_cast<std::size_t>(r);
      std::size_t k = 0;
      try {
        for (; k < n; ++k) {
          const auto count = static_cast<std::int64_t>(calls[k].bytes / sizeof(float));
          comm.barrier();
          start[i][k] = group.clock(r);
          const Tensor part = input.narrow(0, 0, count);
          const CallOptions call = CallOptions{}.with_algorithm(calls[k].algorithm);
          if (calls[k].kind == OpKind::Reduce) {
            comm.reduce(part, 0, ReduceOperation::Sum, call);
          } else if (calls[k].kind == OpKind::Broadcast) {
            comm.broadcast(part, 0, call);
          } else {
            comm.all_reduce(part, ReduceOperation::Sum, call);
          }
          end[i][k] = group.clock(r);
        }
      } catch (const std::exception& e) {  // this call and every later one: NaN
        if (r == 0) std::fprintf(stderr, "sim_bench: %s\n", e.what());
        for (; k < n; ++k) end[i][k] = std::nan("");
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    double first = 0, last = 0;
    for (int r = 0; r < world; ++r) {
      first = std::max(first, start[static_cast<std::size_t>(r)][k]);
      last = std::max(last, end[static_cast<std::size_t>(r)][k]);
    }
    out[k] = last - first;
  }
  return out;
}

double simulate_hierarchical(int world, const LinkModel& model, std::size_t bytes,
                             Algorithm leaders) {
  const int per_host = model.ranks_per_host;
  const int hosts = world / per_host;
  double host_stages = 0;
  if (per_host > 1) {
    const std::vector<double> t = simulate_all_reduces(
        per_host, model,
        {{Algorithm::Auto, bytes, OpKind::Reduce}, {Algorithm::Auto, bytes, OpKind::Broadcast}});
    host_stages = t[0] + t[1];
  }
  if (hosts <= 1) return host_stages;
  LinkModel across = model;
  across.ranks_per_host = 1;
  // One leader per host: the host's cores are no longer shared by its ranks during this stage.
  across.cores_per_host = 0;
  return host_stages + simulate_all_reduces(hosts, across, {{leaders, bytes}})[0];
}

double measure_in_process(int world, std::size_t bytes, Algorithm algorithm) {
  const int iters = bytes <= (64u << 10) ? 60 : bytes <= (1u << 20) ? 20 : 6;
  std::vector<Communicator> comms = InProcessGroup::create(world);
  std::vector<std::vector<double>> times(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Communicator& comm = comms[static_cast<std::size_t>(r)];
      const Tensor t = Tensor::ones({static_cast<std::int64_t>(bytes / sizeof(float))}, DType::F32);
      for (int i = 0; i < iters + 2; ++i) {
        comm.barrier();
        const auto t0 = std::chrono::steady_clock::now();
        comm.all_reduce(t, ReduceOperation::Sum, CallOptions{}.with_algorithm(algorithm));
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i >= 2) times[static_cast<std::size_t>(r)].push_back(s);  // 2 warm-up calls
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> per_iter(static_cast<std::size_t>(iters), 0.0);
  for (const auto& rank_times : times) {
    for (std::size_t i = 0; i < per_iter.size(); ++i)
      per_iter[i] = std::max(per_iter[i], rank_times[i]);
  }
  // The 20th percentile: this machine is shared, and the median of the slow tail moves from run
  // to run far more than the model's own error.
  std::sort(per_iter.begin(), per_iter.end());
  return per_iter[per_iter.size() / 5];
}

namespace {

double fit_error(const std::vector<Measured>& points, const LinkModel& model) {
  double error = 0;
  for (const Measured& m : points) {
    const double predicted = simulate_all_reduces(m.world, model, {{m.algorithm, m.bytes}})[0];
    const double e = std::log(predicted / m.seconds);
    error += e * e;
  }
  return error;
}

// This machine: one host whose ranks share its cores.
LinkModel with(double alpha, double bandwidth, double fold) {
  LinkModel m = LinkModel::one_host(SimLink{alpha, bandwidth}, fold, alpha / 2);
  m.cores_per_host = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return m;
}

}  // namespace

LinkModel fit_one_host(const std::vector<Measured>& points, const LinkModel& start) {
  double p[3] = {start.in_host.alpha_s, start.in_host.bytes_per_s, start.fold_s_per_byte};
  double best = fit_error(points, with(p[0], p[1], p[2]));
  // Coordinate search in log space: try each parameter times and divided by a factor; shrink
  // the factor when no move helps.
  for (double factor = 4.0; factor > 1.02; factor = std::sqrt(factor)) {
    for (bool moved = true; moved;) {
      moved = false;
      for (double& q : p) {
        for (double f : {factor, 1 / factor}) {
          const double keep = q;
          q = keep * f;
          const double e = fit_error(points, with(p[0], p[1], p[2]));
          if (e < best) {
            best = e;
            moved = true;
          } else {
            q = keep;
          }
        }
      }
    }
  }
  return with(p[0], p[1], p[2]);
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace ruccl::bench
