// TcpStoreServer's poll loop: accepting, reading requests as their bytes come, writing replies as
// clients drain them, closing silent connections. The requests themselves:
// tcp_store_server_requests.cpp.
#include "collective/store/tcp_store_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <list>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/net/peer_auth.h"
#include "collective/net/socket_detail.h"
#include "collective/store/store_protocol.h"
#include "collective/store/tcp_store_server_state.h"

namespace ruccl {

TcpStoreServer::TcpStoreServer(const std::string& host, std::uint16_t port,
                               const SessionId& session, std::optional<JobSecret> secret,
                               TcpStoreLimits limits)
    : state_(std::make_unique<State>()) {
  state_->session = session;
  state_->limits = limits;
  state_->secret = std::move(secret);
  state_->listener = net::listen_tcp(host, port);
  net::set_nonblocking(state_->listener, true);
  endpoint_ = net::local_endpoint(state_->listener);
  state_->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state_->wake_fd < 0)
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("TcpStoreServer on ", endpoint_.to_string(),
                              ": eventfd: ", net::detail::errno_text(errno)));
  state_->thread = std::thread([s = state_.get()] {
    try {
      s->run();
    } catch (...) {
      // Out of memory or the like: stop serving rather than end the process. Closing every
      // connection tells each client (PeerLost), which is what a lost store means.
    }
    s->clients.clear();
    s->parked.clear();
  });
}

TcpStoreServer::~TcpStoreServer() {
  state_->stop.store(true);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(state_->wake_fd, &one, sizeof one);
  state_->thread.join();
  state_->clients.clear();  // closes every connection
  ::close(state_->wake_fd);
}

std::uint64_t TcpStoreServer::refused_connections() const {
  return state_->refused.load(std::memory_order_relaxed);
}

void TcpStoreServer::State::run() {
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> ids;
  while (!stop.load()) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_fd, POLLIN, 0});
    const Clock::time_point now = Clock::now();
    const bool accepting = now >= accept_paused_until;
    fds.push_back({accepting ? listener.fd() : -1, POLLIN, 0});  // a negative fd is skipped
    for (auto& [id, c] : clients) {
      short events = 0;
      if (c.out.size() - c.sent < kMaxUnsentBytes) events |= POLLIN;  // back-pressure
      if (c.sent < c.out.size()) events |= POLLOUT;
      fds.push_back({c.sock.fd(), events, 0});
      ids.push_back(id);
    }
    int timeout = poll_timeout_ms(now);
    if (const auto greet = first_greet_by()) {
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*greet - now).count();
      const int until = static_cast<int>(std::clamp<std::int64_t>(ms, 0, 1 << 30));
      timeout = timeout < 0 ? until : std::min(timeout, until);
    }
    if (!accepting) timeout = timeout < 0 ? 50 : std::min(timeout, 50);
    const int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) break;  // cannot happen with valid descriptors
    if (stop.load()) break;
    if (fds[1].revents & POLLIN) accept_all();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const short ev = fds[i + 2].revents;
      auto it = clients.find(ids[i]);
      if (ev == 0 || it == clients.end()) continue;
      if (ev & (POLLIN | POLLHUP | POLLERR)) read_from(it->second, it->first);
      if (!it->second.dead && (ev & POLLOUT)) flush(it->second);
    }
    answer_parked(Clock::now());
    close_silent(Clock::now());
    for (auto it = clients.begin(); it != clients.end();) {
      if (!it->second.dead) {
        ++it;
        continue;
      }
      const std::uint64_t id = it->first;
      parked.remove_if([&](const Parked& p) { return p.client == id; });
      it = clients.erase(it);
    }
  }
}

int TcpStoreServer::State::poll_timeout_ms(Clock::time_point now) const {
  if (parked.empty()) return -1;
  Clock::time_point first = parked.front().deadline;
  for (const Parked& p : parked) first = std::min(first, p.deadline);
  if (first <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(first - now).count();
  return static_cast<int>(std::min<std::int64_t>(ms, 1 << 30));
}

void TcpStoreServer::State::accept_all() {
  for (;;) {
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors: the listener would stay readable and spin the loop; leave it alone
      // for a while (the pending connections wait in the backlog).
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        accept_paused_until = Clock::now() + std::chrono::milliseconds(50);
      return;  // EAGAIN: no more for now
    }
    Client& c = clients[next_client++];
    c.sock = net::Socket(fd);
    c.greet_by = Clock::now() + kHandshakeTimeout;
    net::set_nodelay(c.sock);  // replies (and the handshake's answer) leave at once
    try {
      const net::Endpoint from = net::peer_endpoint(c.sock);
      c.peer = from.to_string();
      c.host = from.host;
    } catch (const CollectiveError&) {
      c.peer = "an unknown address";
    }
    evict_stale_handshakes(c.host);  // descriptors stay bounded; a real client still comes in
    if (secret) {
      c.stage = AuthStage::Challenge;
      c.need = net::kAuthMessageBytes;
    }
    c.in.resize(c.need);
  }
}

void TcpStoreServer::State::read_from(Client& c, std::uint64_t id) {
  std::size_t budget = kReadBudgetBytes;
  while (!c.dead && budget > 0) {
    if (c.filled == c.in.size()) {
      // Grow towards what the header announced (already checked against the caps), only as
      // fast as bytes actually come.
      const std::size_t grow = std::max(kMinGrowBytes, c.filled);
      c.in.resize(std::min(c.need, c.filled + grow));
    }
    const std::size_t want = std::min(c.in.size() - c.filled, budget);
    const ssize_t got = ::recv(c.sock.fd(), c.in.data() + c.filled, want, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
      if (c.stage != AuthStage::Done) {  // left mid-authentication: it did not prove the secret
        net::count_auth_refusal(str("store client ", c.peer, " claiming rank ", c.binding.from_rank,
                                    ": closed during authentication"));
        refuse(c);
      }
      c.dead = true;  // EOF or reset: the client left
      return;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      return;  // nothing more for now
    }
    c.filled += static_cast<std::size_t>(got);
    budget -= static_cast<std::size_t>(got);
    if (c.stage == AuthStage::Challenge && c.filled >= net::kAuthMagic.size() &&
        !std::equal(net::kAuthMagic.begin(), net::kAuthMagic.end(), c.in.begin())) {
      // Not an authentication message (a client without the secret): no need to wait for more.
      net::count_auth_refusal(str("store client ", c.peer, ": no job secret (bad magic)"));
      refuse(c);
      return;
    }
    if (c.filled < c.need) continue;
    if (c.stage != AuthStage::Done) {
      authenticate(c);
      c.filled = 0;
      c.need = c.stage == AuthStage::Done ? kStoreRequestHeaderBytes : net::kAuthMessageBytes;
      c.in.resize(c.need);
      continue;
    }
    if (c.need == kStoreRequestHeaderBytes) {
      StoreRequestHeader header;
      if (!decode_store_request_header(c.in, header).empty() || header.session != session) {
        refuse(c);  // no reply: a stranger learns nothing, not even why
        return;
      }
      c.need = kStoreRequestHeaderBytes + header.body_bytes();
      if (c.filled < c.need) continue;
    }
    StoreRequest request;
    if (!decode_store_request(std::span(c.in.data(), c.need), request).empty()) {
      refuse(c);
      return;
    }
    c.greeted = true;
    c.filled = 0;
    c.need = kStoreRequestHeaderBytes;
    if (c.in.capacity() > kMinGrowBytes) std::vector<std::uint8_t>().swap(c.in);
    c.in.resize(kStoreRequestHeaderBytes);
    handle(id, request);  // may append a reply to c.out
  }
}

void TcpStoreServer::State::flush(Client& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.sock.fd(), c.out.data() + c.sent, c.out.size() - c.sent,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.dead = true;
      return;
    }
    c.sent += static_cast<std::size_t>(n);
  }
  c.out.clear();
  c.sent = 0;
  if (c.out.capacity() > kMinGrowBytes) std::vector<std::uint8_t>().swap(c.out);
}

void TcpStoreServer::State::close_silent(Clock::time_point now) {
  for (auto& [id, c] : clients) {
    if (c.greeted || c.dead || c.greet_by > now) continue;
    if (secret) {
      net::count_auth_refusal(str("store client ", c.peer, ": no authentication within ",
                                  kHandshakeTimeout.count(), " s"));
    }
    refuse(c);
  }
}

void TcpStoreServer::State::evict_stale_handshakes(const std::string& host) {
  // Only connections that stayed in their handshake a while count: a job whose many ranks on one
  // host connect at once is accepted in one burst, before any of them had a chance to speak.
  const Clock::time_point stale = Clock::now() + kHandshakeTimeout - kPendingGrace;
  Client* oldest = nullptr;
  std::size_t pending = 0;
  for (auto& [id, c] : clients) {
    if (c.greeted || c.dead || c.greet_by > stale || c.host.empty() || c.host != host) continue;
    ++pending;
    if (oldest == nullptr || c.greet_by < oldest->greet_by) oldest = &c;
  }
  if (pending < limits.pending_per_address || oldest == nullptr) return;
  if (secret) {
    net::count_auth_refusal(str("store client ", oldest->peer, ": evicted, one of ", pending,
                                " connections from its address silent in their handshake"));
  }
  refuse(*oldest);
}

std::optional<Clock::time_point> TcpStoreServer::State::first_greet_by() const {
  std::optional<Clock::time_point> first;
  for (const auto& [id, c] : clients) {
    if (c.greeted || c.dead) continue;
    first = first ? std::min(*first, c.greet_by) : c.greet_by;
  }
  return first;
}

}  // namespace ruccl
