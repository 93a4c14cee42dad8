#pragma once
// What sim_bench runs: all_reduce series in the simulated world (timing mode), in-process
// measurements on this machine, and the link model fitted to measured times (sim_runs.cpp).
#include <cstddef>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/protocol/call_record.h"

namespace ruccl::bench {

/// One all_reduce (or `kind`: Reduce to rank 0, Broadcast from rank 0) of `bytes` F32 bytes per
/// rank with `algorithm`.
struct SimCall {
  Algorithm algorithm;
  std::size_t bytes;
  OpKind kind = OpKind::AllReduce;
};

/// Every Algorithm value this build has, Auto first (algorithm_name() is null past the last), so
/// algorithms added later join the tables by themselves.
std::vector<Algorithm> all_algorithms();

/// Simulated seconds of each call on one group of `world` ranks in timing mode: every rank runs
/// barrier() then the call; a call's time is the last rank's end minus the last rank's start. A
/// call that fails (and every later one: the group is finished) is NaN.
std::vector<double> simulate_all_reduces(int world, const LinkModel& model,
                                         const std::vector<SimCall>& calls);

/// A hierarchical all_reduce (HostHierarchy, collective/host_hierarchy.h) on `model`'s hosts,
/// composed of three simulated stages, each on its own group: a reduce to the host's first rank
/// over one host's ranks (Auto), an all_reduce of `bytes` among the hosts' leaders (one rank per
/// host: its NIC is the leader's alone) with `leaders` (every host reduces at once over its own
/// links, so the stages only add), then a broadcast over one host (Auto). `world` must be a
/// multiple of model.ranks_per_host. NaN when a stage fails.
double simulate_hierarchical(int world, const LinkModel& model, std::size_t bytes,
                             Algorithm leaders);

/// Measured seconds of an all_reduce of `bytes` over `world` in-process ranks (threads) with
/// `algorithm` on this machine: barrier, then the call; max over ranks, 20th percentile over
/// iterations.
double measure_in_process(int world, std::size_t bytes, Algorithm algorithm);

/// One measured point: an all_reduce of `bytes` over `world` ranks with `algorithm` took `seconds`.
struct Measured {
  int world;
  std::size_t bytes;
  Algorithm algorithm;
  double seconds;
};

/// The one-host link model (latency, bandwidth, fold cost, per-message overhead = latency / 2,
/// this machine's cores shared by its ranks) whose simulated times fit `points` best (least squares
/// of log(predicted / measured), by coordinate search from `start`).
LinkModel fit_one_host(const std::vector<Measured>& points, const LinkModel& start);

/// "4 KiB", "1 MiB", ...
std::string size_text(std::size_t bytes);

}  // namespace ruccl::bench
