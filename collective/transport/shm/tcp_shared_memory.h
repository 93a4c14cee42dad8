#pragma once
// Setting up the shared-memory data path of a TCP group (shm_channel.h), once its mesh of TCP
// connections stands: every rank publishes its host identity in the store; each pair with the
// same identity shares a segment, created by the lower rank, opened by the higher, then
// unlinked (a job that dies leaves nothing in /dev/shm once both sides had it open). A pair whose
// segment cannot be made or opened (a full /dev/shm, a sandbox) keeps sending over TCP; both
// sides learn the outcome through the store, so they always agree on the path.
#include <memory>
#include <vector>

#include "collective/store/store.h"
#include "collective/common/deadline.h"
#include "collective/transport/shm/shm_channel.h"

namespace ruccl {

struct TcpTransportOptions;

struct SharedMemoryPeers {
  std::unique_ptr<LocalBell> bell;                    // null when no peer shares memory
  std::vector<std::unique_ptr<ShmChannel>> channels;  // by peer; null: that peer is over TCP
  bool everywhere = false;                            // every pair of the group shares memory
};

/// The channels of `rank`. Every rank of the group calls it after connecting the mesh, `enabled`
/// or not (a rank that may not share memory publishes no identity, and no peer waits for it).
/// Throws Timeout naming the ranks that never published their part by `deadline`.
SharedMemoryPeers connect_shared_memory(Store& store, int rank, int world_size,
                                        const SessionBytes& session,
                                        const TcpTransportOptions& options, bool enabled,
                                        const Deadline& deadline);

}  // namespace ruccl
