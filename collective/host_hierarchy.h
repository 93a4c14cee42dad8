#pragma once
// HostHierarchy: hierarchical collectives over the hosts of a group (docs/collectives.md,
// "Hierarchical collectives"). The ranks of one host reduce among themselves (through shared
// memory where the transport has it), one leader per host (the host's lowest rank) crosses the
// network in the leaders' group, then each host broadcasts from its leader. Built on
// Communicator::split: no new connection, the groups reuse the parent's links.
//
//   HostHierarchy hosts(comm, read_launch_env().node_rank);   // a collective, once
//   Tensor sum = hosts.all_reduce(grad, ReduceOperation::Sum);
//
// Its fold is host by host (each host's ranks in the canonical order of the host group, then the
// hosts in the canonical order of the leaders' group), not the canonical linear fold over all
// ranks: results are bit-identical on every rank and every run, not across algorithms. So it is
// offered only to a communicator made with Determinism::PerAlgorithm.
#include <optional>
#include <vector>

#include "collective/communicator.h"

namespace ruccl {

class HostHierarchy {
 public:
  /// A collective of `comm`: every rank passes the id of its host (any non-negative int; ranks
  /// that pass the same id share a host, e.g. LaunchEnv::node_rank). Throws
  /// CollectiveError(InvalidArgument) on every rank when comm was not made with
  /// Determinism::PerAlgorithm or a rank passed a negative id ("HostHierarchy: expected ..., got
  /// ...").
  HostHierarchy(Communicator comm, int host_id);

  /// The communicator it was made over.
  Communicator& world() { return world_; }
  /// The ranks of this rank's host (ranked as in world()).
  Communicator& host() { return host_; }
  /// The hosts' leaders (one per host, ranked as in world()); std::nullopt on other ranks.
  std::optional<Communicator>& leaders() { return leaders_; }
  /// Whether this rank is its host's leader (its lowest rank).
  bool is_leader() const { return leaders_.has_value(); }
  /// The number of hosts.
  int num_hosts() const { return num_hosts_; }
  /// The host index (in [0, num_hosts()), hosts ordered by their lowest rank) of world rank `r`.
  int host_of(int world_rank) const;

  /// Communicator::all_reduce's contract (same shape, dtype and errors), folded host by host:
  /// host reduce to the leader, all_reduce among the leaders, broadcast within each host. Mean:
  /// the Sum divided by world().world_size() on every rank.
  Tensor all_reduce(const Tensor& t, ReduceOperation op = ReduceOperation::Sum);
  /// Communicator::broadcast's contract: root's host first (when root is not its leader), then the
  /// leaders, then every other host from its leader.
  Tensor broadcast(const Tensor& t, int root);
  /// Communicator::reduce's contract: the hierarchical all_reduce's value on root, std::nullopt
  /// elsewhere (the leaders' step is a reduce to root's leader, then a send to root).
  std::optional<Tensor> reduce(const Tensor& t, int root,
                               ReduceOperation op = ReduceOperation::Sum);

 private:
  Communicator world_;
  Communicator host_;
  std::optional<Communicator> leaders_;
  std::vector<int> host_index_;  // by world rank
  std::vector<int> local_rank_;  // by world rank: its rank in its host group
  int num_hosts_ = 0;
};

}  // namespace ruccl
