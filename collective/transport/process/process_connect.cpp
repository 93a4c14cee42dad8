// Connecting a process group: the mesh of TCP connections (tcp/tcp_mesh.h), then each peer's
// path, the best kind that reaches it first, as NCCL's selectTransport does: shared memory
// between ranks of one host whose segment could be made (shm/shm_connect.h), else the data
// connection itself (tcp/tcp_path.h, with the test's wire faults when there are any). Both sides
// of a pair choose the same kind: each kind's set-up agrees through the store.
#include "collective/transport/fault/wire_fault_path.h"
#include "collective/transport/process/process_transport.h"
#include "collective/transport/shm/shm_connect.h"
#include "collective/transport/tcp/tcp_mesh.h"
#include "collective/transport/tcp/tcp_path.h"

namespace ruccl {

std::unique_ptr<TcpTransport> TcpTransport::connect(Store& store, int rank, int world_size,
                                                    const SessionId& session,
                                                    TcpTransportOptions options) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("TcpTransport::connect: ", options.names.name(rank),
                              ": expected 0 <= rank < world size >= 1, got rank ", rank,
                              " of world size ", world_size));
  }
  const Deadline deadline = Deadline::after(options.connect_timeout, "TcpTransport::connect");
  TcpMesh mesh = connect_tcp_mesh(store, rank, world_size, session, options, deadline);
  // Wire faults are faults of the TCP wire: a rank with a plan shares memory with nobody. Every
  // rank takes part in the set-up (one that may not share memory says so: peers must not wait).
  const bool faults = !options.wire_faults.empty();
  SharedMemoryPaths shm;
  if (world_size > 1) {
    shm = connect_shared_memory(store, rank, world_size, session, options,
                                options.shared_memory == SharedMemory::Auto && !faults, deadline);
  }
  std::shared_ptr<WireFaults> wire;
  if (faults) wire = std::make_shared<WireFaults>(options.wire_faults, options.kill);
  auto select = [&](int peer, TcpLink& link, const RankNames& names) -> std::unique_ptr<PeerPath> {
    if (auto path = shm.path_to(peer, link, names)) return path;
    auto tcp = std::make_unique<TcpPath>(link, rank, peer, names);
    if (wire) return std::make_unique<WireFaultPath>(std::move(tcp), wire);
    return tcp;
  };
  const LinkKind link = shm.everywhere() ? LinkKind::SharedMemory : LinkKind::Copying;
  return std::make_unique<TcpTransport>(rank, world_size, std::move(options), std::move(mesh.data),
                                        std::move(mesh.control), link, select);
}

}  // namespace ruccl
