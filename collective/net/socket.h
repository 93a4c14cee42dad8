#pragma once
// TCP sockets over POSIX (IPv4 and IPv6) for everything that crosses a process: the rendezvous
// store, the TCP transport. Every call that can wait takes a Deadline; every failure is a
// CollectiveError naming the endpoint and the system's reason (strerror):
//   InvalidConfig  a bad address, port, interface name, or a listener that cannot bind
//   Timeout        a deadline passed (connect, accept, a read or write that did not finish)
//   PeerLost       the peer closed the connection or reset it (EOF, EPIPE, ECONNRESET, ...)
//
// The helpers work on blocking and non-blocking descriptors alike: reads and writes use
// MSG_DONTWAIT and poll() for the rest of the deadline, so the descriptor's mode only matters to
// code that calls the system directly. Writes use MSG_NOSIGNAL: a lost peer never raises SIGPIPE.
// Sockets are created close-on-exec (a launcher's children do not inherit them).
//
//   net::Socket listener = net::listen_tcp("127.0.0.1", 0);
//   net::Endpoint at = net::local_endpoint(listener);            // 127.0.0.1:<ephemeral>
//   net::Socket client = net::connect_tcp(at, Deadline::after(5s));
//   net::Socket server = net::accept_tcp(listener, Deadline::after(5s));
//   net::write_all(client, "hi", 2, Deadline::after(1s));
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "collective/common/deadline.h"

namespace ruccl::net {

/// A host (numeric IPv4/IPv6 address or a name) and a TCP port.
struct Endpoint {
  std::string host;
  std::uint16_t port = 0;

  /// "127.0.0.1:29500"; IPv6 hosts in brackets: "[::1]:29500".
  std::string to_string() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// Parses "host:port" or "[ipv6]:port" (port 0..65535, decimal). A malformed text is
/// InvalidConfig naming it and saying what was expected.
Endpoint parse_endpoint(std::string_view text);

/// An owned socket descriptor (RAII, move-only). Remembers a name of its peer ("127.0.0.1:29500")
/// for error messages; the listen/connect/accept functions set it.
class Socket {
 public:
  Socket() = default;
  /// Owns `fd` (closed by the destructor). `peer` names the other end in error messages.
  explicit Socket(int fd, std::string peer = {}) : fd_(fd), peer_(std::move(peer)) {}
  Socket(Socket&& other) noexcept : fd_(other.release()), peer_(std::move(other.peer_)) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  /// Closes the descriptor now (idempotent).
  void close() noexcept;
  /// Gives up ownership: returns the descriptor and leaves this socket invalid.
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// The name of the other end for messages ("127.0.0.1:41234"; for a listener, its own address).
  const std::string& peer() const { return peer_; }
  void set_peer(std::string peer) { peer_ = std::move(peer); }

 private:
  int fd_ = -1;
  std::string peer_;
};

/// A listener on host:port (port 0: an ephemeral port, see local_endpoint), SO_REUSEADDR set.
/// `host` may be a numeric address or a name; "0.0.0.0" / "::" listen on every interface.
/// InvalidConfig naming host:port and the reason when it cannot resolve, bind or listen.
Socket listen_tcp(const std::string& host, std::uint16_t port, int backlog = 128);

/// Whether a numeric address is a loopback one: 127.0.0.0/8, ::1 or ::ffff:127.x.y.z.
bool is_loopback_address(std::string_view host);

/// The address a socket is bound to (getsockname), e.g. the ephemeral port of a listener.
Endpoint local_endpoint(const Socket& s);
/// The address of the other end of a connected socket (getpeername).
Endpoint peer_endpoint(const Socket& s);

/// Connects to `to` before `deadline`. Refused, unreachable or reset attempts are retried with a
/// short backoff (10 ms doubling to 250 ms: the server may not be up yet) until the deadline; then
/// Timeout naming the endpoint and the last error. An unresolvable host is InvalidConfig. The
/// returned socket is in blocking mode.
Socket connect_tcp(const Endpoint& to, const Deadline& deadline);

/// Accepts one connection on `listener` before `deadline` (Timeout naming the listener's address
/// on expiry). The returned socket is blocking and names its peer.
Socket accept_tcp(const Socket& listener, const Deadline& deadline);

/// TCP_NODELAY on (small frames leave at once).
void set_nodelay(const Socket& s);
/// The largest SO_SNDBUF and SO_RCVBUF an unprivileged process may set: the smaller of
/// net.core.wmem_max and rmem_max (0 when /proc does not say).
int max_buffer_bytes();
/// SO_SNDBUF and SO_RCVBUF of `bytes` each (the kernel doubles them for its bookkeeping and stops
/// autotuning the connection's buffers) when max_buffer_bytes() allows `bytes`; otherwise leaves
/// the kernel's autotuning, whose ceiling (tcp_wmem, tcp_rmem) is above a capped fixed buffer
/// (a stock kernel caps at 208 KiB). Returns whether it set them.
bool set_buffer_bytes(const Socket& s, int bytes);
/// O_NONBLOCK on or off.
void set_nonblocking(const Socket& s, bool on);
/// SO_KEEPALIVE with TCP_KEEPIDLE = TCP_KEEPINTVL = `idle_and_interval` (whole seconds, at least
/// 1), TCP_KEEPCNT = `count`, and TCP_USER_TIMEOUT = idle + count x interval (unacknowledged
/// data also fails the connection after that long). A dead peer then fails reads and writes.
void set_keepalive(const Socket& s, std::chrono::milliseconds idle_and_interval, int count);

/// Writes all `n` bytes before `deadline` (EINTR and EAGAIN handled; poll() waits). The peer gone
/// (EPIPE, ECONNRESET, ...) is PeerLost naming s.peer(); the deadline passing is Timeout.
void write_all(const Socket& s, const void* data, std::size_t n, const Deadline& deadline);

/// One piece of a vectored write.
struct ConstBuffer {
  const void* data = nullptr;
  std::size_t size = 0;
};
/// write_all of several buffers in order with sendmsg (one system call for a header and its
/// payload where the kernel takes it all). Same errors as write_all.
void write_all(const Socket& s, std::span<const ConstBuffer> buffers, const Deadline& deadline);

/// Reads exactly `n` bytes before `deadline`. EOF is PeerLost "<peer> closed the connection";
/// a reset is PeerLost; the deadline passing is Timeout saying how many bytes had come.
void read_exact(const Socket& s, void* data, std::size_t n, const Deadline& deadline);

/// Waits until `s` is readable (data, EOF or an error pending) or the deadline passes; returns
/// whether it is readable. Never throws for the deadline (the caller decides).
bool wait_readable(const Socket& s, const Deadline& deadline);

/// The first IPv4 address of interface `ifname` (else its first global IPv6 address, else a
/// link-local one as "fe80::...%ifname"), numeric. InvalidConfig naming `ifname` and listing the
/// interfaces that exist when there is no such interface or it has no address.
std::string interface_address(const std::string& ifname);

/// The host listeners bind to: the address of $RUCCL_SOCKET_IFNAME when it is set and not empty,
/// else "127.0.0.1" (loopback unless told otherwise, like NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME).
std::string default_listen_host();

}  // namespace ruccl::net
