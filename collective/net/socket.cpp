#include "collective/net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/env.h"
#include "collective/net/socket_detail.h"

namespace ruccl::net {

using detail::errno_text;

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return str("[", host, "]:", port);
  return str(host, ":", port);
}

Endpoint parse_endpoint(std::string_view text) {
  const auto bad = [&](const char* why) {
    return CollectiveError(CollectiveErrorKind::InvalidConfig,
                           str("bad endpoint '", text, "': ", why,
                               " (expected host:port or [ipv6]:port, port 0..65535)"));
  };
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) throw bad("no ']' after the IPv6 address");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') throw bad("no ':port' after ']'");
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) throw bad("no ':port'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      throw bad("an IPv6 address must be written in brackets");
  }
  if (host.empty()) throw bad("empty host");
  if (port.empty() || port.size() > 5) throw bad("the port is not a number of 1 to 5 digits");
  std::uint32_t value = 0;
  for (const char c : port) {
    if (c < '0' || c > '9') throw bad("the port is not a decimal number");
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value > 65535) throw bad("the port is above 65535");
  return Endpoint{std::string(host), static_cast<std::uint16_t>(value)};
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
    peer_ = std::move(other.peer_);
  }
  return *this;
}

void Socket::close() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);  // never retried on EINTR: on Linux the descriptor is released either way
    fd_ = -1;
  }
}

namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo for a stream socket; returns the gai error code (0 on success).
int resolve(const std::string& host, std::uint16_t port, bool passive, AddrInfoList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list);
  out.reset(rc == 0 ? list : nullptr);
  return rc;
}

int set_flag(int fd, int level, int option, int value) {
  return setsockopt(fd, level, option, &value, sizeof value);
}

void check_option(const Socket& s, int rc, const char* option) {
  if (rc != 0)
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("setsockopt(", option, ") on the socket to ", s.peer(),
                              " failed: ", errno_text(errno)));
}

// Whether a failed connect is worth another try before the deadline (nobody listening yet, a
// route not up yet, a backlog overflowing).
bool connect_retryable(int err) {
  return err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH || err == ETIMEDOUT ||
         err == ECONNRESET || err == ECONNABORTED || err == EAGAIN || err == EADDRNOTAVAIL;
}

// One connect attempt to `addr` within the deadline. Returns the connected socket, or an invalid
// one with `err` set.
Socket try_connect(const addrinfo& addr, const Deadline& deadline, int& err) {
  Socket s(
      ::socket(addr.ai_family, addr.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, addr.ai_protocol));
  if (!s.valid()) {
    err = errno;
    return Socket();
  }
  if (::connect(s.fd(), addr.ai_addr, addr.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      err = errno;
      return Socket();
    }
    pollfd p{s.fd(), POLLOUT, 0};
    for (;;) {
      const int rc = ::poll(&p, 1, detail::poll_timeout_ms(deadline));
      if (rc > 0) break;
      if (rc == 0) {
        err = ETIMEDOUT;
        return Socket();
      }
      if (errno != EINTR) {
        err = errno;
        return Socket();
      }
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    if (getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      err = so_error;
      return Socket();
    }
  }
  // Connecting to a free port of this host in the ephemeral range can, rarely, connect the socket
  // to itself (TCP simultaneous open: the kernel picked the destination port as the source). That
  // is nobody listening: treat it as refused.
  if (local_endpoint(s) == peer_endpoint(s)) {
    err = ECONNREFUSED;
    return Socket();
  }
  set_nonblocking(s, false);
  return s;
}

}  // namespace

Socket listen_tcp(const std::string& host, std::uint16_t port, int backlog) {
  const std::string where = Endpoint{host, port}.to_string();
  AddrInfoList list;
  if (const int rc = resolve(host, port, true, list); rc != 0)
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("cannot listen on ", where, ": ", gai_strerror(rc)));
  std::string last = "no address";
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last = str("socket: ", errno_text(errno));
      continue;
    }
    set_flag(s.fd(), SOL_SOCKET, SO_REUSEADDR, 1);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      last = str("bind: ", errno_text(errno));
      continue;
    }
    if (::listen(s.fd(), backlog) != 0) {
      last = str("listen: ", errno_text(errno));
      continue;
    }
    s.set_peer(local_endpoint(s).to_string());
    return s;
  }
  throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                        str("cannot listen on ", where, ": ", last));
}

bool is_loopback_address(std::string_view host) {
  return host.starts_with("127.") || host == "::1" || host.starts_with("::ffff:127.");
}

Endpoint local_endpoint(const Socket& s) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str("getsockname on socket ", s.fd(), ": ", errno_text(errno)));
  return detail::endpoint_of(addr);
}

Endpoint peer_endpoint(const Socket& s) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw CollectiveError(CollectiveErrorKind::PeerLost,
                          str("getpeername on the socket to ", s.peer(), ": ", errno_text(errno)));
  return detail::endpoint_of(addr);
}

Socket connect_tcp(const Endpoint& to, const Deadline& deadline) {
  const std::string where = to.to_string();
  auto backoff = std::chrono::milliseconds(10);
  constexpr auto kMaxBackoff = std::chrono::milliseconds(250);
  std::string last = "no attempt before the deadline";
  for (;;) {
    AddrInfoList list;
    const int rc = resolve(to.host, to.port, false, list);
    if (rc != 0 && rc != EAI_AGAIN)
      throw CollectiveError(
          CollectiveErrorKind::InvalidConfig,
          str("cannot connect to ", where, ": cannot resolve '", to.host, "': ", gai_strerror(rc)));
    if (rc == EAI_AGAIN) last = str("resolving '", to.host, "': ", gai_strerror(rc));
    for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
      int err = 0;
      Socket s = try_connect(*a, deadline, err);
      if (s.valid()) {
        s.set_peer(where);
        return s;
      }
      last = errno_text(err);
      if (!connect_retryable(err))
        throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                              str("cannot connect to ", where, ": ", last));
    }
    const auto now = Deadline::Clock::now();
    if (deadline.expired(now)) break;
    std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(backoff, deadline.at() - now));
    backoff = std::min(backoff * 2, kMaxBackoff);
    if (deadline.expired()) break;
  }
  throw CollectiveError(
      CollectiveErrorKind::Timeout,
      str("connect to ", where, " (", deadline.label(), "): no connection within ",
          deadline.timeout().count(), " ms; last error: ", last));
}

Socket accept_tcp(const Socket& listener, const Deadline& deadline) {
  pollfd p{listener.fd(), POLLIN, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, detail::poll_timeout_ms(deadline));
    if (rc < 0 && errno != EINTR)
      throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                            str("poll on the listener ", listener.peer(), ": ", errno_text(errno)));
    if (rc > 0) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd =
          ::accept4(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
      if (fd >= 0) return Socket(fd, detail::endpoint_of(addr).to_string());
      // A connection that went away before accept, or a spurious wake-up: try again.
      if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED &&
          errno != EPROTO)
        throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                              str("accept on ", listener.peer(), ": ", errno_text(errno)));
    }
    if (deadline.expired())
      throw CollectiveError(CollectiveErrorKind::Timeout,
                            str("accept on ", listener.peer(), " (", deadline.label(),
                                "): no connection within ", deadline.timeout().count(), " ms"));
  }
}

void set_nodelay(const Socket& s) {
  check_option(s, set_flag(s.fd(), IPPROTO_TCP, TCP_NODELAY, 1), "TCP_NODELAY");
}

int max_buffer_bytes() {
  long long least = std::numeric_limits<int>::max();
  for (const char* path : {"/proc/sys/net/core/wmem_max", "/proc/sys/net/core/rmem_max"}) {
    std::ifstream in(path);
    long long v = 0;
    if (!(in >> v) || v <= 0) return 0;
    least = std::min(least, v);
  }
  return static_cast<int>(least);
}

bool set_buffer_bytes(const Socket& s, int bytes) {
  if (bytes <= 0 || bytes > max_buffer_bytes()) return false;
  check_option(s, set_flag(s.fd(), SOL_SOCKET, SO_SNDBUF, bytes), "SO_SNDBUF");
  check_option(s, set_flag(s.fd(), SOL_SOCKET, SO_RCVBUF, bytes), "SO_RCVBUF");
  return true;
}

void set_nonblocking(const Socket& s, bool on) {
  const int flags = fcntl(s.fd(), F_GETFL);
  const int wanted = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (flags < 0 || fcntl(s.fd(), F_SETFL, wanted) != 0)
    throw CollectiveError(
        CollectiveErrorKind::InvalidArgument,
        str("fcntl(O_NONBLOCK) on the socket to ", s.peer(), ": ", errno_text(errno)));
}

void set_keepalive(const Socket& s, std::chrono::milliseconds idle_and_interval, int count) {
  if (count < 1 || idle_and_interval.count() < 1)
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str("set_keepalive: expected an interval >= 1 ms and a count >= 1, got ",
                              idle_and_interval.count(), " ms and ", count));
  const auto seconds =
      static_cast<int>(std::max<std::int64_t>(1, (idle_and_interval.count() + 999) / 1000));
  check_option(s, set_flag(s.fd(), SOL_SOCKET, SO_KEEPALIVE, 1), "SO_KEEPALIVE");
  check_option(s, set_flag(s.fd(), IPPROTO_TCP, TCP_KEEPIDLE, seconds), "TCP_KEEPIDLE");
  check_option(s, set_flag(s.fd(), IPPROTO_TCP, TCP_KEEPINTVL, seconds), "TCP_KEEPINTVL");
  check_option(s, set_flag(s.fd(), IPPROTO_TCP, TCP_KEEPCNT, count), "TCP_KEEPCNT");
  const auto user_timeout_ms = std::min<std::int64_t>(std::int64_t{seconds} * 1000 * (1 + count),
                                                      std::numeric_limits<int>::max());
  check_option(s,
               set_flag(s.fd(), IPPROTO_TCP, TCP_USER_TIMEOUT, static_cast<int>(user_timeout_ms)),
               "TCP_USER_TIMEOUT");
}

std::string interface_address(const std::string& ifname) {
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0)
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("interface '", ifname, "': getifaddrs: ", errno_text(errno)));
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> list(raw, freeifaddrs);
  std::vector<std::string> names;
  bool exists = false;
  std::string v4, v6_global, v6_link;
  for (const ifaddrs* a = list.get(); a != nullptr; a = a->ifa_next) {
    if (std::find(names.begin(), names.end(), a->ifa_name) == names.end())
      names.emplace_back(a->ifa_name);
    if (ifname != a->ifa_name) continue;
    exists = true;
    if (a->ifa_addr == nullptr) continue;
    if (a->ifa_addr->sa_family == AF_INET && v4.empty()) {
      v4 = detail::endpoint_of(*reinterpret_cast<const sockaddr_storage*>(a->ifa_addr)).host;
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      char text[INET6_ADDRSTRLEN] = {};
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) {
        if (v6_link.empty()) v6_link = str(text, "%", ifname);
      } else if (v6_global.empty()) {
        v6_global = text;
      }
    }
  }
  if (!v4.empty()) return v4;
  if (!v6_global.empty()) return v6_global;
  if (!v6_link.empty()) return v6_link;
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
  throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                        str(exists ? "interface '" : "no network interface '", ifname,
                            exists ? "' has no IPv4 or IPv6 address" : "'",
                            " (interfaces here: ", listed.empty() ? "none" : listed, ")"));
}

std::string default_listen_host() {
  const std::optional<std::string> ifname = EnvReader().text("RUCCL_SOCKET_IFNAME");
  if (!ifname) return "127.0.0.1";
  try {
    return interface_address(*ifname);
  } catch (const CollectiveError& e) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("RUCCL_SOCKET_IFNAME=", *ifname, ": ", e.what()));
  }
}

}  // namespace ruccl::net
