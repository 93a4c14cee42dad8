#pragma once
// The registered session API's global level (docs/collectives.md, "Registered session API"): one
// process per node, `num_devices` local peers on each. Local peers reduce in process, node
// leaders (the lowest PeerId of each node) run the collective over TCP, then the result is
// broadcast locally.
//
// Rendezvous: the node whose node_address equals global_address's host serves a TcpStore at
// global_address for the life of its process; every node connects to it. Node ranks are the
// order of the nodes' (node_address, data_service_port), so they do not depend on who arrived
// first. Each node leader then joins a TcpGroup of num_nodes ranks whose listener binds
// node_address:data_service_port.
//
// Errors: an error a node's leader meets (a local mismatch, a mismatch between nodes, a lost
// node) is published in the store under the session's error key (the first one wins) and the
// global and local groups are failed; the leaders of the other nodes read the key when they see
// the abort, so every peer of every node raises the error with its own kind.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/registered/collective_config.h"
#include "collective/store/store.h"

namespace ruccl::session_detail {

/// Where a PeerId lives in a multi-node session.
struct PeerPlace {
  int node = 0;   ///< node rank
  int local = 0;  ///< local rank on that node (PeerId order)
};

/// The global level of one formed multi-node session, shared by its local peers.
class NodeLevel {
 public:
  /// Meets the other nodes through the store and connects the node leaders (called by the
  /// thread whose registration completed the local round; `local_peers` in PeerId order).
  /// Throws CollectiveError: RegistrationParamsMismatch (a config differs between nodes),
  /// DuplicateRegistration (a PeerId on two nodes), InvalidConfig (two nodes with the same
  /// node_address:data_service_port, a bad address), Timeout (nodes that never came), PeerLost.
  /// `cancelled` (reset_collective) is polled while the nodes are awaited: Aborted.
  static std::shared_ptr<NodeLevel> connect(const CollectiveConfig& config,
                                            const std::vector<PeerId>& local_peers, Device device,
                                            const std::atomic<bool>& cancelled);

  int node_rank() const { return node_rank_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  /// Peers over every node (Mean divides by this).
  int total_peers() const { return total_peers_; }
  /// Where `id` lives, or nullopt when no node registered it.
  std::optional<PeerPlace> locate(PeerId id) const;

  Tensor all_reduce(Communicator& local, const Tensor& t, ReduceOperation op);
  std::optional<Tensor> reduce(Communicator& local, const Tensor& t, ReduceOperation op,
                               PeerId root);
  Tensor broadcast(Communicator& local, const std::optional<Tensor>& t);

  /// reset_collective: fails the global group (the other nodes see Aborted).
  void abort(const std::string& reason);

  /// For tests and messages: "node 1 (127.0.0.2:29611)".
  std::string node_name(int node) const;

 private:
  struct Node {
    std::string endpoint;
    std::vector<std::uint32_t> peers;
  };
  NodeLevel() = default;

  // The error every peer of this node raises for `e` (caught by local peer `local_rank`); the
  // leader also publishes it and fails both groups.
  CollectiveError on_error(Communicator& local, const CollectiveError& e);
  template <typename Body>
  auto guarded(Communicator& local, Body&& body) -> decltype(body());
  // Every local peer's (session op, reduce op, root, has tensor); checks they agree.
  std::vector<std::int64_t> agree_locally(Communicator& local, const char* op_name,
                                          std::int64_t code, std::int64_t reduce_op,
                                          std::int64_t root, bool has_tensor);

  CollectiveConfig config_;
  std::shared_ptr<Store> store_;
  std::string prefix_;       // "ruccl/session/<generation>/"
  Communicator global_;      // used by the leader only
  std::vector<Node> nodes_;  // by node rank
  int node_rank_ = 0;
  int total_peers_ = 0;
  std::mutex mutex_;
  std::optional<CollectiveError> failure_;  // what this node's peers raise once failed
};

}  // namespace ruccl::session_detail
