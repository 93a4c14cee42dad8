// Connecting the mesh of a process group: every rank listens on an ephemeral port and publishes
// "host:port" in the store; rank r dials every lower rank twice (control, then data) and accepts
// the connections of every higher rank. Each connection opens with a Hello frame each way carrying
// the session id, the sender's rank, the world size and the channel, all checked: a stranger (a
// port scan, another job) is closed without a reply and the rank keeps accepting. Dialling only
// lower ranks and accepting after dialling cannot deadlock: rank r's dials are answered by ranks
// that have finished their own (by induction from rank 0, which only accepts), and the listen
// backlog holds the connections of higher ranks until r accepts them.
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>

#include "collective/common/crc32c.h"
#include "collective/net/peer_auth.h"
#include "collective/net/socket_detail.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"
#include "collective/transport/tcp/tcp_mesh.h"

namespace ruccl {

namespace {

std::string address_key(const TcpTransportOptions& options, int rank) {
  return str(options.store_prefix, "/addr/", rank);
}

void send_hello(const net::Socket& socket, const SessionId& session, int rank, int world,
                TcpChannel channel, const Deadline& deadline) {
  HelloPayload hello{};
  hello.rank = rank;
  hello.world_size = world;
  hello.channel = channel;
  hello.session = session;
  std::vector<std::uint8_t> payload;
  encode_hello_payload(hello, payload);
  FrameHeader h{};
  h.type = FrameType::Hello;
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  h.session = session;
  h.seq = 1;
  h.payload_crc = crc32c(payload.data(), payload.size());
  std::uint8_t bytes[kFrameHeaderBytes + kHelloPayloadBytes];
  encode_frame_header(h, std::span<std::uint8_t, kFrameHeaderBytes>(bytes, kFrameHeaderBytes));
  std::copy(payload.begin(), payload.end(), bytes + kFrameHeaderBytes);
  net::write_all(socket, bytes, kFrameHeaderBytes + payload.size(), deadline);
}

/// Reads and checks a Hello; returns "" and fills `hello`, or what was wrong.
std::string read_hello(const net::Socket& socket, const SessionId& session, int world,
                       const Deadline& deadline, HelloPayload& hello) {
  std::uint8_t header[kFrameHeaderBytes];
  net::read_exact(socket, header, kFrameHeaderBytes, deadline);
  FrameHeader h{};
  std::string why = decode_frame_header(
      std::span<const std::uint8_t, kFrameHeaderBytes>(header, kFrameHeaderBytes), session, 1, h);
  if (!why.empty()) return why;
  if (h.type != FrameType::Hello)
    return str("a ", frame_type_name(h.type), " frame before the Hello");
  std::uint8_t payload[kHelloPayloadBytes];
  if (h.payload_bytes != kHelloPayloadBytes) {
    return str("a Hello of ", h.payload_bytes, " bytes (expected ", kHelloPayloadBytes, ")");
  }
  net::read_exact(socket, payload, kHelloPayloadBytes, deadline);
  if (crc32c(payload, kHelloPayloadBytes) != h.payload_crc) return "Hello payload CRC mismatch";
  why = decode_hello_payload(std::span<const std::uint8_t>(payload, kHelloPayloadBytes), hello);
  if (!why.empty()) return why;
  if (hello.session != session) return "wrong session id";
  if (hello.world_size != world) {
    return str("world size ", hello.world_size, " (expected ", world, ")");
  }
  return "";
}

// How long an accepted connection may stay silent before it is closed, and how long each step
// of the handshake of one that spoke may take (a real rank answers in microseconds).
constexpr std::chrono::milliseconds kSilentTimeout{5000};
constexpr std::chrono::milliseconds kStepTimeout{2000};
constexpr std::chrono::milliseconds kNoWait{0};

net::AuthPurpose auth_purpose(TcpChannel channel) {
  return channel == TcpChannel::Data ? net::AuthPurpose::MeshData : net::AuthPurpose::MeshControl;
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

/// The acceptor's side of one connection that spoke: authentication (with a secret), then its
/// Hello, each step bounded by kStepTimeout. True when it is a rank of this group this rank still
/// waits for (`hello` says which); otherwise calls refuse(socket, claimed rank, why) and the
/// caller drops the connection without a word.
template <typename Refuse>
bool accept_handshake(const net::Socket& socket, const SessionId& session, int world_size, int rank,
                      const TcpTransportOptions& options,
                      const std::vector<std::optional<TcpLink>>& data,
                      const std::vector<std::optional<TcpLink>>& control, HelloPayload& hello,
                      Refuse&& refuse) {
  const Deadline step = Deadline::after(std::min(kStepTimeout, options.connect_timeout), "Hello");
  std::string why;
  net::AuthBinding proven;
  if (options.secret) {
    static constexpr net::AuthPurpose kMesh[] = {net::AuthPurpose::MeshControl,
                                                 net::AuthPurpose::MeshData};
    why = net::authenticate_acceptor(socket, *options.secret, kMesh, rank, session, step, proven);
  }
  try {
    if (why.empty()) why = read_hello(socket, session, world_size, step, hello);
  } catch (const CollectiveError& e) {
    why = e.what();
  }
  if (why.empty() && options.secret &&
      (hello.rank != proven.from_rank || auth_purpose(hello.channel) != proven.purpose)) {
    why = str("its Hello (rank ", hello.rank, ") is not what it proved (rank ", proven.from_rank,
              ")");
  }
  if (!why.empty()) {
    refuse(socket, proven.from_rank, why);
    return false;
  }
  const int p = hello.rank;
  if (p <= rank || p >= world_size) return false;  // a member in the wrong place: no reply
  return !(hello.channel == TcpChannel::Data ? data : control)[static_cast<std::size_t>(p)];
}

}  // namespace

TcpMesh connect_tcp_mesh(Store& store, int rank, int world_size, const SessionId& session,
                         const TcpTransportOptions& options, const Deadline& deadline) {
  const std::string host =
      options.listen_host.empty() ? net::default_listen_host() : options.listen_host;
  const std::size_t world = static_cast<std::size_t>(world_size);
  std::vector<std::optional<TcpLink>> data(world);
  std::vector<std::optional<TcpLink>> control(world);
  auto keep = [&](int peer, TcpChannel channel, net::Socket socket) {
    net::set_nodelay(socket);
    if (channel == TcpChannel::Data) net::set_buffer_bytes(socket, options.socket_buffer_bytes);
    net::set_nonblocking(socket, true);
    const bool check = options.payload_checksum == PayloadChecksum::On ||
                       (options.payload_checksum == PayloadChecksum::Auto &&
                        (!net::is_loopback_address(net::local_endpoint(socket).host) ||
                         !net::is_loopback_address(net::peer_endpoint(socket).host)));
    auto& slot = (channel == TcpChannel::Data ? data : control)[static_cast<std::size_t>(peer)];
    slot.emplace(std::move(socket), session, peer, options.names.name(peer), check);
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
      if (options.secret) {
        try {
          net::authenticate_dialer(socket, *options.secret,
                                   {auth_purpose(channel), rank, p, session}, deadline);
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
      keep(p, channel, std::move(socket));
    }
  }

  // Accept every higher rank's two connections. Accepted connections wait in `waiting` until they
  // speak, so silent ones hold nothing (each is closed 5 s after it came); one that speaks gets
  // its handshake at once, each step bounded by kStepTimeout. Strangers are closed without a word
  // (and, with a secret, those that fail authentication are counted and named in a timeout).
  struct Waiting {
    net::Socket socket;
    Deadline by;
  };
  std::vector<Waiting> waiting;
  std::vector<std::string> refused;
  std::vector<pollfd> fds;
  const auto refuse = [&](const net::Socket& socket, std::int32_t claimed, const std::string& why) {
    if (!options.secret) return;
    const std::string what = str(socket.peer(), " claiming rank ", claimed, ": ", why);
    net::count_auth_refusal(what);
    refused.push_back(what);
  };
  std::size_t expected = 2 * (world - 1 - static_cast<std::size_t>(rank));
  while (expected > 0) {
    fds.assign(1, pollfd{listener.fd(), POLLIN, 0});
    Deadline next = deadline;
    for (const Waiting& w : waiting) {
      fds.push_back(pollfd{w.socket.fd(), POLLIN, 0});
      if (w.by.at() < next.at()) next = w.by;
    }
    if (::poll(fds.data(), fds.size(), net::detail::poll_timeout_ms(next)) < 0 && errno != EINTR) {
      throw connect_error(CollectiveErrorKind::InvalidConfig, options, rank,
                          str("poll: ", net::detail::errno_text(errno)));
    }
    for (std::size_t i = waiting.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0 && !waiting[i].by.expired()) continue;
      net::Socket socket = std::move(waiting[i].socket);
      const bool spoke = fds[i + 1].revents != 0;
      waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
      if (!spoke) {
        refuse(socket, -1, "said nothing within 5000 ms");
        continue;
      }
      HelloPayload hello{};
      if (accept_handshake(socket, session, world_size, rank, options, data, control, hello,
                           refuse)) {
        send_hello(socket, session, rank, world_size, hello.channel, deadline);
        keep(hello.rank, hello.channel, std::move(socket));
        --expected;
      }
    }
    if ((fds[0].revents & POLLIN) != 0) {
      try {  // now, or not at all: one that went away before accept is simply gone
        net::Socket socket = net::accept_tcp(listener, Deadline::after(kNoWait));
        net::set_nodelay(socket);
        waiting.push_back(Waiting{std::move(socket), Deadline::after(kSilentTimeout, "Hello")});
      } catch (const CollectiveError& e) {
        if (e.kind() != CollectiveErrorKind::Timeout) throw;
      }
    }
    if (expected > 0 && deadline.expired()) {
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
  }
  return TcpMesh{std::move(data), std::move(control)};
}

}  // namespace ruccl
