#pragma once
// The mesh of a process group: two TCP connections between every pair of ranks, a data connection
// (the peer path of the pair, or its quiet watch when the pair shares memory) and a control
// connection (tcp_control.h). Every connection opens with a checked Hello (session, rank, world
// size, channel): a stranger is closed without a reply.
#include <optional>
#include <vector>

#include "collective/common/deadline.h"
#include "collective/store/store.h"
#include "collective/transport/tcp/tcp_link.h"
#include "collective/transport/tcp/tcp_options.h"

namespace ruccl {

/// By peer (this rank's own entry empty): the data and the control connection, non-blocking.
struct TcpMesh {
  std::vector<std::optional<TcpLink>> data;
  std::vector<std::optional<TcpLink>> control;
};

/// Rank `rank` of `world_size` listens, publishes its address in `store`, dials every lower rank
/// and accepts every higher one, by `deadline`. Throws CollectiveError: Timeout naming the ranks
/// that never arrived, PeerLost (a listener that is not the rank it should be).
TcpMesh connect_tcp_mesh(Store& store, int rank, int world_size, const SessionId& session,
                         const TcpTransportOptions& options, const Deadline& deadline);

}  // namespace ruccl
