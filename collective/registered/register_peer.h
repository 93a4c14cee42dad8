#pragma once
// The registered session API (the original tensor collective API): threads register as peers of
// one process-wide session, then call collectives by PeerId.
//
//   // on each of 4 threads, with its own id:
//   register_peer(PeerId(r), Device::cpu(), CollectiveConfig().with_num_devices(4));
//   Tensor sum = all_reduce(PeerId(r), t, ReduceOperation::Sum);
//   finish_collective(PeerId(r));
//
// Peers get ranks in increasing PeerId order. Errors of a failed operation reach every caller of
// that operation (CollectiveError); after one, the session is finished: call reset_collective().
//
// Several nodes (one process each, num_devices peers on each): set num_nodes, global_address
// ("host:port" of the session store, served by the node whose node_address is that host),
// node_address (the address this node's TCP listener binds) and data_service_port (its port)
// on every node. Local peers reduce in process, node leaders (each node's lowest PeerId) run
// the collective over TCP with the global strategies, then hand the result back locally; Mean
// divides by the number of peers over every node (docs/collectives.md, "Registered session
// API").
#include <optional>

#include "collective/common/reduce_operation.h"
#include "collective/registered/collective_config.h"
#include "tensor/core/device.h"
#include "tensor/core/tensor.h"

namespace ruccl {

/// Registers `id` on `device`; blocks until config.num_devices peers have registered (deadline:
/// config.timeout; multi-node: then until every node came, within config.timeout). Errors:
/// InvalidConfig (config not valid), DuplicateRegistration (also a PeerId on two nodes),
/// RegistrationParamsMismatch (configs differ between peers or nodes; raised on every waiting
/// peer of every node), Timeout (peers or nodes that never came), PeerLost (the session store
/// or a node went away), Aborted (reset_collective ran meanwhile).
void register_peer(PeerId id, Device device, const CollectiveConfig& config);

/// All-reduce among the registered peers (Mean divides by the number of peers, over all nodes).
Tensor all_reduce(PeerId id, const Tensor& t, ReduceOperation op);

/// Broadcast: exactly one peer passes a tensor; every peer gets it.
Tensor broadcast(PeerId id, const std::optional<Tensor>& t);

/// Reduce to the peer `root`; root gets the result, the others std::nullopt.
std::optional<Tensor> reduce(PeerId id, const Tensor& t, ReduceOperation op, PeerId root);

/// Ends `id`'s session normally. When every peer has finished, a new session may register.
void finish_collective(PeerId id);

/// Forgets every registration and in-flight operation: blocked callers get CollectiveError
/// (Aborted), nothing crashes, later registrations start a fresh session. Completes nothing,
/// checkpoints nothing; not lossless recovery.
void reset_collective();

}  // namespace ruccl
