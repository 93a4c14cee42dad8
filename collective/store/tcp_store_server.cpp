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

namespace ruccl {

namespace {

using Clock = std::chrono::steady_clock;

// Bytes one client may read per poll round before the others get theirs (fairness).
constexpr std::size_t kReadBudgetBytes = std::size_t{4} << 20;
// A request buffer grows by at least this much as bytes arrive.
constexpr std::size_t kMinGrowBytes = std::size_t{64} << 10;
// A client whose unread replies exceed this is not read from until it drains them.
constexpr std::size_t kMaxUnsentBytes = kMaxStoreValueBytes + (std::size_t{1} << 20);

// How long a connection may take to authenticate (with a secret) or send its first request
// (without): a silent connection is closed after this, so it holds neither a descriptor nor a
// slot for long.
constexpr auto kHandshakeTimeout = std::chrono::seconds(5);

/// Where a connection is in its authentication (net/peer_auth.h; only with a secret).
enum class AuthStage : std::uint8_t { Challenge, Proof, Done };

struct Client {
  net::Socket sock;
  std::string peer;                   // "127.0.0.1:40112", for refusals and write-once errors
  AuthStage stage = AuthStage::Done;  // Challenge first when the server has a secret
  bool greeted = false;               // authenticated (with a secret) or one request decoded
  Clock::time_point greet_by;         // closed when not greeted by then
  net::AuthBinding binding;           // with a secret: the client's proven claims
  std::array<std::uint8_t, 32> dialer_nonce{}, acceptor_nonce{};
  std::vector<std::uint8_t> in;  // the request being read: [0, filled) has come
  std::size_t filled = 0;
  std::size_t need = kStoreRequestHeaderBytes;  // the header, then header + body
  std::vector<std::uint8_t> out;                // replies not yet sent: [sent, size)
  std::size_t sent = 0;
  bool dead = false;
};

struct Parked {
  std::uint64_t client = 0;
  std::uint64_t request_id = 0;
  StoreOp op = StoreOp::Get;
  std::vector<std::string> keys;
  Clock::time_point deadline;
};

}  // namespace

struct TcpStoreServer::State {
  SessionId session{};
  std::optional<JobSecret> secret;
  net::Socket listener;
  int wake_fd = -1;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> refused{0};
  std::thread thread;

  // Owned by the serving thread.
  std::map<std::uint64_t, Client> clients;
  std::uint64_t next_client = 1;
  std::map<std::string, StoreValue, std::less<>> values;
  std::map<std::string, std::string, std::less<>> writers;  // write-once keys: who wrote each
  std::list<Parked> parked;
  Clock::time_point accept_paused_until{};

  void run();
  void accept_all();
  void read_from(Client& c, std::uint64_t id);
  void flush(Client& c);
  void handle(std::uint64_t client, StoreRequest& request);
  void reply(std::uint64_t client, std::uint64_t request_id, StoreStatus status, StoreValue value);
  void refuse(Client& c) {
    c.dead = true;
    refused.fetch_add(1, std::memory_order_relaxed);
  }
  /// One authentication message of `c` has come (in c.in): answers or checks it.
  void authenticate(Client& c);
  /// Closes the connections not greeted by `now`.
  void close_silent(Clock::time_point now);
  /// When the next connection not yet greeted runs out of time, if any.
  std::optional<Clock::time_point> first_greet_by() const;
  /// "the writer" of a request of `client`: its address and, with a secret, its proven rank.
  std::string writer(std::uint64_t client) const;
  bool has_all(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(),
                       [&](const std::string& k) { return values.find(k) != values.end(); });
  }
  void answer_parked(Clock::time_point now);
  int poll_timeout_ms(Clock::time_point now) const;
};

TcpStoreServer::TcpStoreServer(const std::string& host, std::uint16_t port,
                               const SessionId& session, std::optional<JobSecret> secret)
    : state_(std::make_unique<State>()) {
  state_->session = session;
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
    net::set_nodelay(c.sock);  // replies (and the handshake's answer) leave at once
    try {
      c.peer = net::peer_endpoint(c.sock).to_string();
    } catch (const CollectiveError&) {
      c.peer = "an unknown address";
    }
    c.greet_by = Clock::now() + kHandshakeTimeout;
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

void TcpStoreServer::State::reply(std::uint64_t client, std::uint64_t request_id,
                                  StoreStatus status, StoreValue value) {
  auto it = clients.find(client);
  if (it == clients.end() || it->second.dead) return;
  StoreReply r;
  r.header.status = status;
  r.header.request_id = request_id;
  r.value = std::move(value);
  encode_store_reply(r, it->second.out);
  flush(it->second);
}

void TcpStoreServer::State::handle(std::uint64_t client, StoreRequest& r) {
  const std::uint64_t rid = r.header.request_id;
  const auto bool_value = [](bool b) { return StoreValue{static_cast<std::uint8_t>(b ? 1 : 0)}; };
  switch (r.header.op) {
    case StoreOp::Hello:
      reply(client, rid, StoreStatus::Ok,
            StoreValue{static_cast<std::uint8_t>(kStoreProtocolVersion & 0xFF),
                       static_cast<std::uint8_t>(kStoreProtocolVersion >> 8)});
      return;
    case StoreOp::Set:
      if (store_key_is_write_once(r.key)) {
        const auto it = values.find(r.key);
        if (it != values.end() && it->second != r.value) {
          const std::string what =
              str("store key \"", r.key,
                  "\" is written once per attempt (it carries an address or "
                  "identity): first set by ",
                  writers[r.key], ", a second write refused from ", writer(client));
          reply(client, rid, StoreStatus::InvalidArgument, StoreValue(what.begin(), what.end()));
          return;
        }
        if (it == values.end()) writers[r.key] = writer(client);
      }
      values.insert_or_assign(std::move(r.key), std::move(r.value));
      reply(client, rid, StoreStatus::Ok, {});
      return;
    case StoreOp::Get:
    case StoreOp::Wait: {
      Parked p{client,
               rid,
               r.header.op,
               {},
               Clock::now() + std::chrono::milliseconds(r.header.timeout_ms)};
      if (r.header.op == StoreOp::Get)
        p.keys.push_back(std::move(r.key));
      else
        p.keys = std::move(r.keys);
      parked.push_back(std::move(p));
      return;  // answered by answer_parked, now if the keys are here
    }
    case StoreOp::Add: {
      auto it = values.find(r.key);
      try {
        const std::int64_t sum = store_detail::add_to_text(
            "TcpStoreServer", r.key,
            it == values.end() ? std::span<const std::uint8_t>() : std::span(it->second), r.delta);
        const std::string text = std::to_string(sum);
        values.insert_or_assign(std::move(r.key), StoreValue(text.begin(), text.end()));
        StoreValue v(8);
        for (int i = 0; i < 8; ++i)
          v[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(sum) >> (8 * i));
        reply(client, rid, StoreStatus::Ok, std::move(v));
      } catch (const CollectiveError& e) {
        const std::string what = e.what();
        reply(client, rid, StoreStatus::InvalidArgument, StoreValue(what.begin(), what.end()));
      }
      return;
    }
    case StoreOp::CompareSet: {
      auto it = values.find(r.key);
      if (it == values.end()) {
        if (!r.expected.empty()) {
          reply(client, rid, StoreStatus::Ok, std::move(r.expected));
          return;
        }
        it = values.emplace(std::move(r.key), std::move(r.value)).first;
      } else if (it->second == r.expected) {
        it->second = std::move(r.value);
      }
      reply(client, rid, StoreStatus::Ok, it->second);
      return;
    }
    case StoreOp::Remove:
      reply(client, rid, StoreStatus::Ok, bool_value(values.erase(r.key) > 0));
      return;
    case StoreOp::Check:
      reply(client, rid, StoreStatus::Ok, bool_value(has_all(r.keys)));
      return;
  }
}

void TcpStoreServer::State::authenticate(Client& c) {
  net::AuthMessage m;
  std::string why = net::decode_auth_message(std::span(c.in.data(), net::kAuthMessageBytes), m);
  if (why.empty() && c.stage == AuthStage::Challenge) {
    if (m.type != net::AuthMessageType::Challenge || m.purpose != net::AuthPurpose::Store) {
      why = "not a store challenge";
    } else {
      c.binding = net::AuthBinding{m.purpose, m.from_rank, m.to_rank, session};
      c.dialer_nonce = m.nonce;
      c.acceptor_nonce = net::auth_nonce();
      net::AuthMessage response = m;
      response.type = net::AuthMessageType::Response;
      response.nonce = c.acceptor_nonce;
      response.mac = net::auth_mac(*secret, true, c.binding, c.dialer_nonce, c.acceptor_nonce);
      const auto bytes = net::encode_auth_message(response);
      c.out.insert(c.out.end(), bytes.begin(), bytes.end());
      flush(c);
      c.stage = AuthStage::Proof;
      return;
    }
  } else if (why.empty()) {
    const Mac expected = net::auth_mac(*secret, false, c.binding, c.dialer_nonce, c.acceptor_nonce);
    if (m.type != net::AuthMessageType::Proof || !job_secrets_equal(expected, m.mac)) {
      why = "wrong MAC (it does not hold the secret)";
    } else {
      c.stage = AuthStage::Done;
      c.greeted = true;
      return;
    }
  }
  net::count_auth_refusal(
      str("store client ", c.peer, " claiming rank ", c.binding.from_rank, ": ", why));
  refuse(c);
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

std::optional<Clock::time_point> TcpStoreServer::State::first_greet_by() const {
  std::optional<Clock::time_point> first;
  for (const auto& [id, c] : clients) {
    if (c.greeted || c.dead) continue;
    first = first ? std::min(*first, c.greet_by) : c.greet_by;
  }
  return first;
}

std::string TcpStoreServer::State::writer(std::uint64_t client) const {
  const auto it = clients.find(client);
  if (it == clients.end()) return "a client now gone";
  const Client& c = it->second;
  if (secret && c.binding.from_rank >= 0) return str(c.peer, " (rank ", c.binding.from_rank, ")");
  return c.peer;
}

void TcpStoreServer::State::answer_parked(Clock::time_point now) {
  for (auto it = parked.begin(); it != parked.end();) {
    const Parked& p = *it;
    if (has_all(p.keys)) {
      StoreValue v;
      if (p.op == StoreOp::Get) v = values.find(p.keys.front())->second;
      reply(p.client, p.request_id, StoreStatus::Ok, std::move(v));
    } else if (p.deadline <= now) {
      std::vector<std::string> missing;
      for (const std::string& k : p.keys)
        if (values.find(k) == values.end()) missing.push_back(k);
      StoreValue list;
      encode_store_key_list(missing, list);
      reply(p.client, p.request_id, StoreStatus::Timeout, std::move(list));
    } else {
      ++it;
      continue;
    }
    it = parked.erase(it);
  }
}

}  // namespace ruccl
