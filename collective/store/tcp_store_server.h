#pragma once
// TcpStoreServer: serves the Store of a job over TCP (store_protocol.h) from one thread that
// poll()s every connection; TcpStore (tcp_store.h) is its client. Rank 0 (or ruccl-run) serves;
// every rank, rank 0 included, connects a client.
//
// Nobody can stall it: sockets are non-blocking, a request is read as its bytes come (a slow or
// silent client holds only its own buffer, grown as bytes actually arrive, never to a size the
// peer merely announced), replies are written as the client drains them (a client that stops
// reading stops being read), and a blocking get/wait is parked and answered when its keys arrive
// or its own timeout passes. A request with another session id, bad magic or version, or a length
// over its cap closes that connection without a reply (the peer learns nothing) and the others
// are served on. A connection that has not sent its first request (or, with a job secret,
// finished authenticating) within 5 s is closed. Keys that carry addresses and identities
// (store_key_is_write_once) are written once: a second, different write is InvalidArgument naming
// the key, the first writer and the second.
//
//   TcpStoreServer server("127.0.0.1", 29500, session);  // port 0: an ephemeral port
//   TcpStore client(server.endpoint(), session, Deadline::after(30s));
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "collective/common/job_secret.h"
#include "collective/net/socket.h"
#include "collective/store/store.h"

namespace ruccl {

/// What one TcpStoreServer holds at most (each refusal is a clear error to that client, or, for a
/// connection, a close that refused_connections() counts).
struct TcpStoreLimits {
  /// Keys and values together: a set that would pass it is InvalidArgument naming the cap (a
  /// value alone is capped at kMaxStoreValueBytes by the protocol).
  std::size_t total_bytes = std::size_t{256} << 20;
  /// Connections from one address that have been in their handshake for over 250 ms (not yet
  /// authenticated, or without a secret not yet past their first request): at this many, each
  /// new connection from that address closes the oldest of them, so a flood from one host holds a
  /// bounded number of descriptors while a real client (through in microseconds) still comes in.
  std::size_t pending_per_address = 64;
};

class TcpStoreServer {
 public:
  /// Listens on host:port (InvalidConfig naming them when it cannot) and starts serving. With
  /// `secret`, every connection must first pass the challenge-response of net/peer_auth.h (one
  /// that fails, or says nothing for 5 s, is closed and counted: refused_connections()).
  TcpStoreServer(const std::string& host, std::uint16_t port, const SessionId& session,
                 std::optional<JobSecret> secret = std::nullopt, TcpStoreLimits limits = {});
  /// Stops the thread and closes every connection: clients waiting on it get PeerLost.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  /// The address it listens on (the real port when constructed with port 0).
  const net::Endpoint& endpoint() const { return endpoint_; }
  /// How many connections it closed for a malformed or foreign request (for tests and logs).
  std::uint64_t refused_connections() const;

  struct State;  // the serving thread's state (tcp_store_server.cpp)

 private:
  net::Endpoint endpoint_;
  std::unique_ptr<State> state_;
};

}  // namespace ruccl
