#pragma once
// The results of bench/ddp_bench and its table: per model, one row per (transport, ranks) with
// our four modes, PyTorch DDP's step and the ratios (see ddp_report.cpp).
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/ddp/ddp_worker.h"

namespace ruccl::bench {

/// PyTorch DDP's figure for one (model, ranks): step time and samples/s; empty `why` if measured.
struct DdpPeerTiming {
  double median_ms = -1, samples_per_second = -1;
  std::string why;  ///< why there is none ("not installed", "failed")
};

struct DdpResults {
  std::vector<DdpModeSpec> modes;
  /// (model spec, transport, ranks) -> one timing per mode; absent: the run failed.
  std::map<std::tuple<std::string, std::string, int>, std::vector<DdpModeTiming>> ours;
  std::map<std::tuple<std::string, int>, DdpPeerTiming> peer;  ///< (model spec, ranks)
};

/// Reads rank 0's "R <mode index> <median> <p10> <p90> <comm> <buckets> <loss>" lines (a leading
/// "[rank] " of ruccl-run is skipped); empty when there are not `modes` of them.
std::vector<DdpModeTiming> parse_ddp_lines(const std::string& output, std::size_t modes);

/// The line run_ddp_rank's rank 0 prints for mode `index` (parse_ddp_lines reads it).
std::string ddp_line(std::size_t index, const DdpModeTiming& t);

/// The table of the model spec `spec` ("wide:32"), whose model and batch are `work`'s, in
/// markdown, then one line per row with p10/p90 and the last loss.
void print_ddp_table(const DdpResults& results, const std::string& spec, const DdpWorkload& work,
                     const std::vector<std::string>& transports, const std::vector<int>& worlds,
                     const std::string& peer_cores);

}  // namespace ruccl::bench
