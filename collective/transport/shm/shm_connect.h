#pragma once
// Setting up the shared-memory paths of a process group (shm_path.h), once its mesh of TCP
// connections stands: every rank publishes its host identity in the store; each pair with the
// same identity shares a segment, created by the lower rank, opened by the higher, then
// unlinked (a job that dies leaves nothing in /dev/shm once both sides had it open). A pair whose
// segment cannot be made or opened (a full /dev/shm, a sandbox) keeps sending over TCP; both
// sides learn the outcome through the store, so they always agree on the path. A name already
// taken by someone else (the bell's, or a segment of another user) fails the set-up on every
// rank with a message instead (ShmNameTaken).
#include <memory>
#include <vector>

#include "collective/common/deadline.h"
#include "collective/store/store.h"
#include "collective/transport/shm/shm_path.h"
#include "collective/transport/tcp/tcp_options.h"

namespace ruccl {

/// The name of this group's bell sockets and segments ("\0ruccl-<name>-<rank>",
/// "/ruccl-<name>-<low>-<high>"): 32 hex digits derived one-way (common/job_secret.h,
/// derived_name) from the secret when options.secret is set, else from the session id, and the
/// store prefix. Reveals neither the secret nor the session id.
std::string shared_memory_group_name(const SessionId& session, const TcpTransportOptions& options);

/// The shared-memory side of one rank's group: a channel per peer it shares memory with.
class SharedMemoryPaths {
 public:
  /// The path to `peer` over `quiet` (the pair's data connection), or null: that peer is not
  /// reached through shared memory (another kind of path must take it). Once per peer.
  std::unique_ptr<PeerPath> path_to(int peer, TcpLink& quiet, const RankNames& names);
  /// Whether every pair of the group shares memory (the same on every rank).
  bool everywhere() const { return everywhere_; }

 private:
  friend SharedMemoryPaths connect_shared_memory(Store&, int, int, const SessionId&,
                                                 const TcpTransportOptions&, bool, const Deadline&);
  int rank_ = 0;
  std::shared_ptr<LocalBell> bell_;                    // null when no peer shares memory
  std::vector<std::unique_ptr<ShmChannel>> channels_;  // by peer; null: not through shared memory
  bool everywhere_ = false;
};

/// The shared-memory paths of `rank`. Every rank of the group calls it after connecting the mesh,
/// `enabled` or not (a rank that may not share memory publishes no identity, and no peer waits
/// for it). Throws Timeout naming the ranks that never published their part by `deadline`.
SharedMemoryPaths connect_shared_memory(Store& store, int rank, int world_size,
                                        const SessionId& session,
                                        const TcpTransportOptions& options, bool enabled,
                                        const Deadline& deadline);

}  // namespace ruccl
