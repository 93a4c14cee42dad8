// Reads and writes with deadlines (collective/net/socket.h), and the address conversion.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/net/socket.h"
#include "collective/net/socket_detail.h"

namespace ruccl::net {

namespace detail {

Endpoint endpoint_of(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return Endpoint{text, ntohs(in->sin_port)};
  }
  if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    return Endpoint{text, ntohs(in6->sin6_port)};
  }
  return Endpoint{"?", 0};
}

}  // namespace detail

namespace {

using detail::errno_text;

// Waits for `events` on `s` until the deadline; false when it passed first.
bool wait_for(const Socket& s, short events, const Deadline& deadline) {
  pollfd p{s.fd(), events, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, detail::poll_timeout_ms(deadline));
    if (rc > 0) return true;  // ready, or POLLERR/POLLHUP: the next call reports it
    if (rc == 0 && deadline.expired()) return false;
    if (rc < 0 && errno != EINTR)
      throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                            str("poll on the socket to ", s.peer(), ": ", errno_text(errno)));
  }
}

[[noreturn]] void throw_io_error(const Socket& s, const char* doing, int err, std::size_t done,
                                 std::size_t n) {
  // EBADF / ENOTSOCK / EFAULT / EINVAL are our own misuse; everything else means the connection
  // is gone (reset, broken pipe, keepalive or user timeout, network down).
  const bool misuse = err == EBADF || err == ENOTSOCK || err == EFAULT || err == EINVAL;
  throw CollectiveError(
      misuse ? CollectiveErrorKind::InvalidArgument : CollectiveErrorKind::PeerLost,
      str("connection to ", s.peer(), " lost while ", doing, " (", done, " of ", n,
          " bytes done): ", errno_text(err)));
}

// `doing`: "sending" (to the peer) or "receiving" (from it).
[[noreturn]] void throw_timeout(const Socket& s, const char* doing, std::size_t done, std::size_t n,
                                const Deadline& deadline) {
  const bool sending = std::string_view(doing) == "sending";
  throw CollectiveError(CollectiveErrorKind::Timeout,
                        str(doing, " ", n, " bytes ", sending ? "to " : "from ", s.peer(), " (",
                            deadline.label(), "): ", done, " bytes done when the deadline of ",
                            deadline.timeout().count(), " ms passed"));
}

}  // namespace

void write_all(const Socket& s, const void* data, std::size_t n, const Deadline& deadline) {
  const ConstBuffer one{data, n};
  write_all(s, std::span<const ConstBuffer>(&one, 1), deadline);
}

void write_all(const Socket& s, std::span<const ConstBuffer> buffers, const Deadline& deadline) {
  std::vector<iovec> iov;
  iov.reserve(buffers.size());
  std::size_t total = 0;
  for (const ConstBuffer& b : buffers) {
    if (b.size == 0) continue;
    iov.push_back(iovec{const_cast<void*>(b.data), b.size});
    total += b.size;
  }
  std::size_t done = 0;
  std::size_t first = 0;  // the first iovec not fully written
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<std::size_t>(iov.size() - first, IOV_MAX);
    const ssize_t sent = ::sendmsg(s.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) throw_io_error(s, "sending", errno, done, total);
      if (!wait_for(s, POLLOUT, deadline)) throw_timeout(s, "sending", done, total, deadline);
      continue;
    }
    auto left = static_cast<std::size_t>(sent);
    done += left;
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
}

void read_exact(const Socket& s, void* data, std::size_t n, const Deadline& deadline) {
  auto* out = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::recv(s.fd(), out + done, n - done, MSG_DONTWAIT);
    if (got > 0) {
      done += static_cast<std::size_t>(got);
      continue;
    }
    if (got == 0)
      throw CollectiveError(
          CollectiveErrorKind::PeerLost,
          str(s.peer(), " closed the connection (", done, " of ", n, " bytes of a read had come)"));
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) throw_io_error(s, "receiving", errno, done, n);
    if (!wait_for(s, POLLIN, deadline)) throw_timeout(s, "receiving", done, n, deadline);
  }
}

bool wait_readable(const Socket& s, const Deadline& deadline) {
  return wait_for(s, POLLIN, deadline);
}

}  // namespace ruccl::net
