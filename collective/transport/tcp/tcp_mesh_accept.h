#pragma once
// The accepting side of the mesh (tcp_mesh.h) and the Hello both sides exchange. A rank's
// listener takes every connection at once; one that stays silent waits in a poll set (closed 5 s
// after it came), one that speaks gets its handshake (authentication with a secret, then the
// Hello) on a thread of its own, so a stranger that speaks and then stalls holds up nobody
// (each step is still bounded by 2 s). Per source address at most kMaxSilentPerAddress silent
// connections wait (beyond, the oldest is closed), kMaxHandshakesPerAddress handshakes run
// (beyond, the next ones queue in arrival order) and kMaxSilentPerAddress queue (beyond, the
// oldest queued is closed): a flood from one address holds a bounded number of descriptors and
// threads.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "collective/common/deadline.h"
#include "collective/net/peer_auth.h"
#include "collective/net/socket.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"
#include "collective/transport/tcp/tcp_options.h"

namespace ruccl {

inline constexpr std::size_t kMaxSilentPerAddress = 64;
inline constexpr std::size_t kMaxHandshakesPerAddress = 64;

/// Writes this rank's Hello (seq 1) on a blocking socket.
void send_hello(const net::Socket& socket, const SessionId& session, int rank, int world,
                TcpChannel channel, const Deadline& deadline);
/// Reads and checks a Hello; returns "" and fills `hello`, or what was wrong.
std::string read_hello(const net::Socket& socket, const SessionId& session, int world,
                       const Deadline& deadline, HelloPayload& hello);

net::AuthPurpose auth_purpose(TcpChannel channel);

/// A connection of a higher rank that passed its handshake (its Hello not yet answered).
struct AcceptedPeer {
  net::Socket socket;
  HelloPayload hello{};
  std::optional<net::FrameKeys> keys;  ///< with a secret: the frame keys of the connection
};

/// Accepts on `listener` until `take` has said true `expected` times or `deadline` passes.
/// `take(peer)` is called on this thread for each connection that passed its handshake and
/// returns whether the rank wanted it (it answers its Hello and keeps it). Connections that fail
/// are closed without a word, and with a secret counted (net::count_auth_refusal) and listed in
/// `refused` (address, claimed rank, why). Returns false when the deadline passed first.
bool accept_mesh_peers(const net::Socket& listener, int rank, int world_size,
                       const SessionId& session, const TcpTransportOptions& options,
                       const Deadline& deadline, std::size_t expected,
                       const std::function<bool(AcceptedPeer&)>& take,
                       std::vector<std::string>& refused);

}  // namespace ruccl
