// Connecting the mesh of a process group: every rank listens on an ephemeral port and publishes
// "host:port" in the store; rank r dials every lower rank twice (control, then data) and accepts
// the connections of every higher rank. Each connection opens with a Hello frame each way carrying
// the session id, the sender's rank, the world size and the channel, all checked: a stranger (a
// port scan, another job) is closed without a reply and the rank keeps accepting. Dialling only
// lower ranks and accepting after dialling cannot deadlock: rank r's dials are answered by ranks
// that have finished their own (by induction from rank 0, which only accepts), and the listen
// backlog holds the connections of higher ranks until r accepts them.
#include <algorithm>
#include <utility>

#include "collective/net/peer_auth.h"
#include "collective/transport/tcp/tcp_mesh.h"
#include "collective/transport/tcp/tcp_mesh_accept.h"

namespace ruccl {

namespace {

std::string address_key(const TcpTransportOptions& options, int rank) {
  return str(options.store_prefix, "/addr/", rank);
}

/// "; 2 connections failed authentication, the last: 127.0.0.1:4001 claiming rank 1: ..." or "".
std::string refusals_text(const std::vector<std::string>& refused) {
  if (refused.empty()) return "";
  return str("; ", refused.size(),
             " connection(s) failed authentication, the last: ", refused.back());
}

CollectiveError connect_error(CollectiveErrorKind kind, const TcpTransportOptions& options,
                              int rank, const std::string& what, std::vector<int> ranks = {}) {
  return CollectiveError(kind, str("TcpTransport::connect: ", options.names.name(rank), ": ", what),
                         std::move(ranks));
}

}  // namespace

TcpMesh connect_tcp_mesh(Store& store, int rank, int world_size, const SessionId& session,
                         const TcpTransportOptions& options, const Deadline& deadline) {
  const std::string host =
      options.listen_host.empty() ? net::default_listen_host() : options.listen_host;
  const std::size_t world = static_cast<std::size_t>(world_size);
  std::vector<std::optional<TcpLink>> data(world);
  std::vector<std::optional<TcpLink>> control(world);
  if (options.integrity == Integrity::Mac && !options.secret) {
    throw connect_error(CollectiveErrorKind::InvalidConfig, options, rank,
                        "RUCCL_INTEGRITY=mac needs a job secret (RUCCL_JOB_SECRET), got none: the "
                        "frame MACs are keyed by it");
  }
  // `keys` as this rank sends and receives: (send, receive).
  auto keep = [&](int peer, TcpChannel channel, net::Socket socket,
                  const std::optional<std::pair<FrameKey, FrameKey>>& keys) {
    net::set_nodelay(socket);
    if (channel == TcpChannel::Data) net::set_buffer_bytes(socket, options.socket_buffer_bytes);
    net::set_nonblocking(socket, true);
    const bool check = options.payload_checksum == PayloadChecksum::On ||
                       (options.payload_checksum == PayloadChecksum::Auto &&
                        (!net::is_loopback_address(net::local_endpoint(socket).host) ||
                         !net::is_loopback_address(net::peer_endpoint(socket).host)));
    auto& slot = (channel == TcpChannel::Data ? data : control)[static_cast<std::size_t>(peer)];
    slot.emplace(std::move(socket), session, peer, options.names.name(peer), check);
    if (options.integrity == Integrity::Mac) slot->enable_mac(keys->first, keys->second);
  };

  net::Socket listener;
  if (rank + 1 < world_size) {
    listener = net::listen_tcp(host, options.listen_port, std::max(128, 2 * world_size));
    store.set(address_key(options, rank), net::local_endpoint(listener).to_string());
  }

  // Dial every lower rank: control first, then data.
  for (int p = 0; p < rank; ++p) {
    std::string text;
    try {
      text = store.get_string(address_key(options, p), deadline);
    } catch (const CollectiveError& e) {
      if (e.kind() != CollectiveErrorKind::Timeout) throw;
      throw connect_error(CollectiveErrorKind::Timeout, options, rank,
                          str(options.names.name(p), " never published its address within ",
                              options.connect_timeout.count(), " ms"),
                          {p});
    }
    const net::Endpoint endpoint = net::parse_endpoint(text);
    for (const TcpChannel channel : {TcpChannel::Control, TcpChannel::Data}) {
      net::Socket socket = net::connect_tcp(endpoint, deadline);
      // Before the handshake: its small messages each way would otherwise wait for a delayed
      // ACK (Nagle), 40 ms per connection.
      net::set_nodelay(socket);
      std::optional<std::pair<FrameKey, FrameKey>> keys;
      if (options.secret) {
        try {
          const net::AuthBinding binding{auth_purpose(channel), rank, p, session};
          const net::AuthNonces nonces =
              net::authenticate_dialer(socket, *options.secret, binding, deadline);
          const net::FrameKeys both = net::frame_keys(*options.secret, binding, nonces);
          keys.emplace(both.dialer_to_acceptor, both.acceptor_to_dialer);
        } catch (const CollectiveError& e) {
          if (e.kind() != CollectiveErrorKind::PeerLost) throw;
          throw connect_error(CollectiveErrorKind::PeerLost, options, rank,
                              str("the listener at ", endpoint.to_string(), " is not ",
                                  options.names.name(p), " of this job: ", e.what()),
                              {p});
        }
      }
      send_hello(socket, session, rank, world_size, channel, deadline);
      HelloPayload hello{};
      const std::string why = read_hello(socket, session, world_size, deadline, hello);
      if (!why.empty() || hello.rank != p || hello.channel != channel) {
        throw connect_error(
            CollectiveErrorKind::PeerLost, options, rank,
            str("the listener at ", endpoint.to_string(), " is not ", options.names.name(p),
                " of this session: ", why.empty() ? str("it says it is rank ", hello.rank) : why),
            {p});
      }
      keep(p, channel, std::move(socket), keys);
    }
  }

  // Accept every higher rank's two connections, their handshakes in parallel
  // (tcp_mesh_accept.h): strangers are closed without a word (and, with a secret, those that fail
  // authentication are counted and named in a timeout).
  std::vector<std::string> refused;
  const std::size_t expected = 2 * (world - 1 - static_cast<std::size_t>(rank));
  const auto take = [&](AcceptedPeer& peer) {
    const HelloPayload& hello = peer.hello;
    const int p = hello.rank;
    if (p <= rank || p >= world_size) return false;  // a member in the wrong place: no reply
    if ((hello.channel == TcpChannel::Data ? data : control)[static_cast<std::size_t>(p)]) {
      return false;  // a second one: no reply
    }
    send_hello(peer.socket, session, rank, world_size, hello.channel, deadline);
    std::optional<std::pair<FrameKey, FrameKey>> keys;
    if (peer.keys) keys.emplace(peer.keys->acceptor_to_dialer, peer.keys->dialer_to_acceptor);
    keep(p, hello.channel, std::move(peer.socket), keys);
    return true;
  };
  if (expected > 0 && !accept_mesh_peers(listener, rank, world_size, session, options, deadline,
                                         expected, take, refused)) {
    std::vector<int> absent;
    for (int p = rank + 1; p < world_size; ++p) {
      if (!data[static_cast<std::size_t>(p)] || !control[static_cast<std::size_t>(p)]) {
        absent.push_back(p);
      }
    }
    throw connect_error(CollectiveErrorKind::Timeout, options, rank,
                        str(options.names.list(absent), " never connected within ",
                            options.connect_timeout.count(), " ms", refusals_text(refused)),
                        absent);
  }
  return TcpMesh{std::move(data), std::move(control)};
}

}  // namespace ruccl
