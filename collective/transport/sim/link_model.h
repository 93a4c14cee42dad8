#pragma once
// LinkModel: what a message costs in the simulated world (sim_world.h), LogGP-style. A message of
// n bytes from rank a to rank b, posted when a's virtual clock reads t:
//
//   a pays the per-message overhead o (its clock moves to t + o);
//   it leaves through a's send port (one message at a time per rank) at s = max(t + o, port free)
//   and, between hosts, also through a's host NIC (shared by the host's ranks, one message at a
//   time each way): s = max(s, NIC free); the port is then busy n / beta of the link, the NIC
//   n / nic_bytes_per_s;
//   it arrives at s + alpha + n / beta, no earlier than b's receive port (and b's host NIC) can
//   take it: each is busy n / beta (n / nic_bytes_per_s) per message, in the order messages are
//   posted;
//   b's clock on receiving it: max(b's clock, arrival) + o, plus fold_s_per_byte * n when b folds
//   it (Transport::recv_with: the reduction reads it once) rather than only landing it
//   (recv_into).
//
// alpha and beta come from the link kind of the pair: ranks of one host (shared memory), hosts
// under one switch, hosts under different switches. Ranks are placed in order: ranks
// [h * ranks_per_host, (h + 1) * ranks_per_host) are host h, hosts [k * hosts_per_switch, ...)
// switch k. Each call's agreement (the CallRecord exchange of the control channel) costs
// agreement_seconds(world) after the last rank published its record.
#include <cstddef>
#include <string>

namespace ruccl {

/// How a simulated world moves payloads: Checking copies real bytes (results are real; keep
/// counts small), Timing moves sizes only (no payload is read, written or folded: results are
/// meaningless, times are the model's).
enum class SimMode { Checking, Timing };

/// Latency and bandwidth of one kind of link.
struct SimLink {
  double alpha_s = 1e-6;      ///< latency per message, seconds
  double bytes_per_s = 1e10;  ///< bandwidth of one message stream, bytes per second
};

/// The machine the simulated ranks run on (see the file comment for how a message is costed).
struct LinkModel {
  SimLink in_host{0.5e-6, 10e9};    ///< ranks of one host (shared memory)
  SimLink in_switch{5e-6, 12.5e9};  ///< hosts under one switch (100 Gb/s)
  SimLink across_switches{10e-6, 12.5e9};
  double nic_bytes_per_s = 12.5e9;     ///< each host's NIC, each way, shared by its ranks
  double fold_s_per_byte = 0.1e-9;     ///< gamma: reducing one received byte (10 GB/s)
  double message_overhead_s = 0.5e-6;  ///< o: CPU time per message at each end
  int ranks_per_host = 8;
  int hosts_per_switch = 16;
  /// Cores per host; 0: a core per rank. When a host has more ranks than cores they share them:
  /// every CPU cost of its ranks (o, the fold, the copy of a message between ranks of the host)
  /// takes ranks / cores times longer (cpu_scale). NIC time and latency are not CPU time.
  int cores_per_host = 0;

  /// A cluster of 8-rank hosts with 100 Gb/s NICs, 16 hosts per switch (the defaults above).
  static LinkModel cluster() { return LinkModel{}; }
  /// Every rank on one host (a single machine: one link kind, no NIC).
  static LinkModel one_host(SimLink link, double fold_s_per_byte, double message_overhead_s);

  int host_of(int rank) const { return rank / ranks_per_host; }
  int switch_of_host(int host) const { return host / hosts_per_switch; }
  /// The link between ranks a and b.
  const SimLink& link(int a, int b) const;
  /// How much longer a CPU cost takes on `host` in a world of `world` ranks: its ranks over its
  /// cores, at least 1.
  double cpu_scale(int world, int host) const;
  /// Whether a message from a to b crosses the hosts' NICs.
  bool crosses_hosts(int a, int b) const { return host_of(a) != host_of(b); }
  /// The cost of one call's agreement once every record is out: a gather to one rank and a
  /// broadcast back down a binary tree over the slowest link kind of the group, 2 ceil(log2 W)
  /// hops of alpha + o each (0 for one rank).
  double agreement_seconds(int world) const;
  /// "in host a=0.5us b=10GB/s; in switch ...; NIC 12.5GB/s; fold 10GB/s; o=0.5us; 8 ranks/host,
  /// 16 hosts/switch": the model in one line, for tables.
  std::string describe() const;
};

}  // namespace ruccl
