// The table of bench/ddp_bench (see ddp_report.h).
#include "bench/ddp/ddp_report.h"

#include <cstdio>
#include <sstream>

namespace ruccl::bench {
namespace {

std::string fixed(double v, int precision) {
  if (v < 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, v);
  return buf;
}

std::string ratio(double a, double b) { return a > 0 && b > 0 ? fixed(a / b, 2) + "×" : "n/a"; }

void row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const std::string& c : cells) line += " " + c + " |";
  std::printf("%s\n", line.c_str());
}

}  // namespace

std::string ddp_line(std::size_t index, const DdpModeTiming& t) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "R %zu %.4f %.4f %.4f %.4f %d %.6f", index, t.median_ms, t.p10_ms,
                t.p90_ms, t.comm_ms, t.buckets, t.last_loss);
  return buf;
}

std::vector<DdpModeTiming> parse_ddp_lines(const std::string& output, std::size_t modes) {
  std::vector<DdpModeTiming> out(modes);
  std::vector<bool> seen(modes, false);
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] == '[') {
      const std::size_t close = line.find("] ");
      if (close != std::string::npos) line = line.substr(close + 2);
    }
    std::istringstream f(line);
    std::string tag;
    std::size_t i = 0;
    DdpModeTiming t;
    if (!(f >> tag >> i) || tag != "R" || i >= modes) continue;
    if (f >> t.median_ms >> t.p10_ms >> t.p90_ms >> t.comm_ms >> t.buckets >> t.last_loss) {
      out[i] = t;
      seen[i] = true;
    }
  }
  for (bool s : seen) {
    if (!s) return {};
  }
  return out;
}

void print_ddp_table(const DdpResults& results, const std::string& spec, const DdpWorkload& work,
                     const std::vector<std::string>& transports, const std::vector<int>& worlds,
                     const std::string& peer_cores) {
  // The modes, by ddp_modes()'s order: compute-only, plain, overlapped, overlapped small.
  std::printf(
      "\n#### %s (%s MiB of F32 gradients), batch %lld per rank: step ms (median, the slowest "
      "rank's), PyTorch DDP over gloo (OPENBLAS_CORETYPE %s) in the same run\n\n",
      ddp_model_text(work.model).c_str(),
      fixed(static_cast<double>(ddp_model_gradient_bytes(work.model)) / (1 << 20), 1).c_str(),
      static_cast<long long>(work.batch), peer_cores.c_str());
  std::vector<std::string> heading = {"transport", "ranks"};
  for (const DdpModeSpec& m : results.modes) heading.push_back(m.name + " ms");
  for (const char* h :
       {"PyTorch DDP ms", "overlapped samples/s", "PyTorch samples/s", "overlapped / PyTorch",
        "overlapped / compute-only", "small / compute-only", "communication share of plain"}) {
    heading.push_back(h);
  }
  row(heading);
  std::vector<std::string> align(heading.size(), "---:");
  align[0] = "---";
  row(align);
  std::vector<std::string> details;
  for (const std::string& transport : transports) {
    for (int world : worlds) {
      const auto it = results.ours.find({spec, transport, world});
      const auto peer_it = results.peer.find({spec, world});
      const DdpPeerTiming peer = peer_it == results.peer.end() ? DdpPeerTiming{} : peer_it->second;
      std::vector<std::string> cells = {transport, std::to_string(world)};
      if (it == results.ours.end() || it->second.size() < 4) {
        for (std::size_t i = 2; i < heading.size(); ++i) cells.push_back("failed");
        row(cells);
        continue;
      }
      const std::vector<DdpModeTiming>& t = it->second;
      for (const DdpModeTiming& m : t) {
        cells.push_back(fixed(m.median_ms, 2) +
                        (m.buckets > 0 ? " (" + std::to_string(m.buckets) + " b.)" : ""));
      }
      const double samples = world * static_cast<double>(work.batch) / (t[2].median_ms / 1e3);
      cells.push_back(fixed(peer.median_ms, 2));
      cells.push_back(fixed(samples, 0));
      cells.push_back(fixed(peer.samples_per_second, 0));
      cells.push_back(ratio(samples, peer.samples_per_second));
      cells.push_back(ratio(t[2].median_ms, t[0].median_ms));
      cells.push_back(ratio(t[3].median_ms, t[0].median_ms));
      cells.push_back(t[1].median_ms > 0 ? fixed(100 * t[1].comm_ms / t[1].median_ms, 0) + " %"
                                         : "n/a");
      row(cells);
      std::string d = "# " + transport + " " + std::to_string(world) + " ranks: p10-p90 ms";
      for (std::size_t i = 0; i < t.size(); ++i) {
        d += " " + results.modes[i].name + " " + fixed(t[i].p10_ms, 2) + "-" +
             fixed(t[i].p90_ms, 2) + ",";
      }
      d += " plain's reduce " + fixed(t[1].comm_ms, 2) + " ms; last loss " +
           fixed(t[1].last_loss, 4);
      if (!peer.why.empty()) d += "; PyTorch: " + peer.why;
      details.push_back(d);
    }
  }
  for (const std::string& d : details) std::printf("%s\n", d.c_str());
}

}  // namespace ruccl::bench
