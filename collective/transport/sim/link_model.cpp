#include "collective/transport/sim/link_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ruccl {

LinkModel LinkModel::one_host(SimLink link, double fold_s_per_byte, double message_overhead_s) {
  LinkModel m;
  m.in_host = link;
  m.in_switch = link;
  m.across_switches = link;
  m.nic_bytes_per_s = link.bytes_per_s;
  m.fold_s_per_byte = fold_s_per_byte;
  m.message_overhead_s = message_overhead_s;
  m.ranks_per_host = 1 << 30;  // every rank is on host 0
  m.hosts_per_switch = 1;
  return m;
}

const SimLink& LinkModel::link(int a, int b) const {
  const int ha = host_of(a);
  const int hb = host_of(b);
  if (ha == hb) return in_host;
  return switch_of_host(ha) == switch_of_host(hb) ? in_switch : across_switches;
}

double LinkModel::cpu_scale(int world, int host) const {
  if (cores_per_host <= 0) return 1.0;
  const long long first = static_cast<long long>(host) * ranks_per_host;
  const long long ranks = std::min<long long>(ranks_per_host, world - first);
  return std::max(1.0, static_cast<double>(ranks) / cores_per_host);
}

double LinkModel::agreement_seconds(int world) const {
  if (world <= 1) return 0;
  // The slowest link kind the group uses: the last rank is the farthest from rank 0.
  const double alpha = link(0, world - 1).alpha_s;
  const double hops = 2 * std::ceil(std::log2(static_cast<double>(world)));
  return hops * (alpha + message_overhead_s);
}

std::string LinkModel::describe() const {
  std::ostringstream out;
  auto us = [](double s) { return s * 1e6; };
  auto gbs = [](double bps) { return bps / 1e9; };
  out << "in host a=" << us(in_host.alpha_s) << "us b=" << gbs(in_host.bytes_per_s) << "GB/s";
  if (ranks_per_host < (1 << 30)) {
    out << "; in switch a=" << us(in_switch.alpha_s) << "us b=" << gbs(in_switch.bytes_per_s)
        << "GB/s; across switches a=" << us(across_switches.alpha_s)
        << "us b=" << gbs(across_switches.bytes_per_s) << "GB/s; NIC " << gbs(nic_bytes_per_s)
        << "GB/s each way";
  }
  out << "; fold " << (fold_s_per_byte > 0 ? 1e-9 / fold_s_per_byte : 0.0)
      << "GB/s; o=" << us(message_overhead_s) << "us";
  if (ranks_per_host < (1 << 30)) {
    out << "; " << ranks_per_host << " ranks/host, " << hosts_per_switch << " hosts/switch";
  } else {
    out << "; one host";
  }
  if (cores_per_host > 0) out << "; " << cores_per_host << " cores/host";
  return out.str();
}

}  // namespace ruccl
