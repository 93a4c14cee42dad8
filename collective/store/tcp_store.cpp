#include "collective/store/tcp_store.h"

#include <sys/socket.h>

#include <algorithm>
#include <limits>

#include "collective/common/collective_error.h"
#include "collective/net/peer_auth.h"
#include "collective/store/tcp_store_server.h"

namespace ruccl {

namespace {

using namespace std::chrono_literals;

// How long a client waits past its own deadline for the server's Timeout reply, which names
// the keys still missing (the server parks a request for exactly the time it has left).
constexpr auto kReplyGrace = 2000ms;

std::chrono::milliseconds time_left(const Deadline& d) {
  const auto left = d.at() - Deadline::Clock::now();
  if (left <= Deadline::Clock::duration::zero()) return 0ms;
  return std::chrono::ceil<std::chrono::milliseconds>(left);
}

}  // namespace

TcpStore::TcpStore(net::Endpoint server, const SessionId& session, const Deadline& connect_deadline,
                   std::chrono::milliseconds request_timeout,
                   const std::optional<JobSecret>& secret, int rank)
    : server_(std::move(server)), session_(session), request_timeout_(request_timeout) {
  sock_ = net::connect_tcp(server_, connect_deadline);
  net::set_nodelay(sock_);
  if (secret) {
    const Deadline by =
        Deadline::after(std::max<std::chrono::milliseconds>(time_left(connect_deadline), 1000ms),
                        connect_deadline.label());
    try {
      net::authenticate_dialer(sock_, *secret, {net::AuthPurpose::Store, rank, -1, session}, by);
    } catch (const CollectiveError& e) {
      if (e.kind() != CollectiveErrorKind::PeerLost) throw;
      throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                            str("the store at ", server_.to_string(), ": ", e.what(),
                                " (every rank needs the same RUCCL_JOB_SECRET)"));
    }
  }
  reader_ = std::thread([this] { read_replies(); });
  try {
    StoreRequest hello;
    hello.header.op = StoreOp::Hello;
    const Deadline by =
        Deadline::after(std::max<std::chrono::milliseconds>(time_left(connect_deadline), 1000ms),
                        connect_deadline.label());
    const StoreValue v = call(hello, by, {}, by);
    const unsigned version = v.size() == 2 ? v[0] | (v[1] << 8) : 0;
    if (version != kStoreProtocolVersion)
      throw CollectiveError(
          CollectiveErrorKind::InvalidConfig,
          str("the store at ", server_.to_string(), " speaks store protocol version ", version,
              ", expected ", kStoreProtocolVersion));
    std::lock_guard lock(mutex_);
    hello_done_ = true;
  } catch (const CollectiveError& e) {
    ::shutdown(sock_.fd(), SHUT_RDWR);
    reader_.join();
    if (e.kind() == CollectiveErrorKind::PeerLost)
      throw CollectiveError(
          CollectiveErrorKind::InvalidConfig,
          str("the store at ", server_.to_string(),
              " closed the connection: wrong session id or not a ruccl store, or it wants a "
              "job secret (RUCCL_JOB_SECRET set on its side only) (",
              e.what(), ")"));
    throw;
  }
}

TcpStore::~TcpStore() {
  ::shutdown(sock_.fd(), SHUT_RDWR);  // the reader sees EOF and ends
  reader_.join();
}

void TcpStore::fail(std::string why) {
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = std::move(why);
  }
  ::shutdown(sock_.fd(), SHUT_RDWR);
  replied_.notify_all();
}

void TcpStore::read_replies() {
  const std::string where = str("the store at ", server_.to_string());
  try {
    for (;;) {
      while (!net::wait_readable(sock_, Deadline::after(std::chrono::hours(1)))) {
      }
      std::uint8_t head[kStoreReplyHeaderBytes];
      net::read_exact(sock_, head, sizeof head, request_deadline("store reply"));
      StoreReplyHeader h;
      if (std::string e = decode_store_reply_header(head, h); !e.empty()) {
        fail(str(where, " sent a malformed reply: ", e));
        return;
      }
      StoreReply reply;
      reply.header = h;
      reply.value.resize(h.value_bytes);  // checked against the cap by the decoder
      net::read_exact(sock_, reply.value.data(), reply.value.size(),
                      request_deadline("store reply"));
      std::lock_guard lock(mutex_);
      if (h.request_id == 0 || h.request_id >= next_id_) {
        failure_ = str(where, " sent a malformed reply: a reply to request ", h.request_id,
                       ", which was never sent");
        break;
      }
      // A reply whose caller gave up (its own deadline passed) finds no slot and is dropped.
      if (auto it = pending_.find(h.request_id); it != pending_.end()) {
        it->second->reply = std::move(reply);
        it->second->done = true;
        replied_.notify_all();
      }
    }
  } catch (const CollectiveError& e) {
    fail(e.kind() == CollectiveErrorKind::PeerLost
             ? str(where, " closed the connection (the server stopped or was lost)")
             : str(where, ": ", e.what()));
    return;
  }
  fail({});  // the malformed reply above (failure_ already set)
}

StoreValue TcpStore::call(StoreRequest& request, const Deadline& reply_by,
                          const std::vector<std::string>& keys, const Deadline& user_deadline) {
  const char* op = store_op_name(request.header.op);
  Pending slot;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty())
      throw CollectiveError(CollectiveErrorKind::PeerLost,
                            str(describe(), " ", op, ": ", failure_));
    id = next_id_++;
    pending_[id] = &slot;
  }
  request.header.session = session_;
  request.header.request_id = id;
  std::vector<std::uint8_t> bytes;
  encode_store_request(request, bytes);
  try {
    std::lock_guard lock(write_mutex_);
    net::write_all(sock_, bytes.data(), bytes.size(), request_deadline("store request"));
  } catch (const CollectiveError& e) {
    {
      std::lock_guard lock(mutex_);
      pending_.erase(id);
    }
    // A request cut short leaves the stream in pieces: the connection is finished.
    fail(str("the store at ", server_.to_string(), ": a request could not be sent: ", e.what()));
    throw CollectiveError(CollectiveErrorKind::PeerLost, str(describe(), " ", op, ": ", e.what()));
  }
  std::unique_lock lock(mutex_);
  replied_.wait_until(lock, reply_by.at(), [&] { return slot.done || !failure_.empty(); });
  pending_.erase(id);
  if (!slot.done) {
    if (!failure_.empty())
      throw CollectiveError(CollectiveErrorKind::PeerLost,
                            str(describe(), " ", op, ": ", failure_));
    lock.unlock();
    if (!keys.empty()) store_detail::throw_keys_timeout(describe(), op, keys, user_deadline);
    throw CollectiveError(
        CollectiveErrorKind::Timeout,
        str(describe(), ": no reply to ", op, " within ", reply_by.timeout().count(), " ms"));
  }
  lock.unlock();
  switch (slot.reply.header.status) {
    case StoreStatus::Ok:
      return std::move(slot.reply.value);
    case StoreStatus::Timeout: {
      std::vector<std::string> missing;
      if (!decode_store_key_list(slot.reply.value, missing).empty()) missing = keys;
      store_detail::throw_keys_timeout(describe(), op, missing, user_deadline);
    }
    case StoreStatus::InvalidArgument:
      break;
  }
  throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                        std::string(slot.reply.value.begin(), slot.reply.value.end()));
}

void TcpStore::do_set(std::string_view key, std::span<const std::uint8_t> value) {
  StoreRequest r;
  r.header.op = StoreOp::Set;
  r.key = key;
  r.value.assign(value.begin(), value.end());
  const Deadline d = request_deadline("store set");
  call(r, d, {}, d);
}

StoreValue TcpStore::do_get(std::string_view key, const Deadline& deadline) {
  StoreRequest r;
  r.header.op = StoreOp::Get;
  r.key = key;
  const auto left = time_left(deadline);
  r.header.timeout_ms = static_cast<std::uint32_t>(
      std::min<std::int64_t>(left.count(), std::numeric_limits<std::uint32_t>::max()));
  return call(r, Deadline::after(left + kReplyGrace, deadline.label()), {std::string(key)},
              deadline);
}

void TcpStore::do_wait(std::span<const std::string> keys, const Deadline& deadline) {
  StoreRequest r;
  r.header.op = StoreOp::Wait;
  r.keys.assign(keys.begin(), keys.end());
  const auto left = time_left(deadline);
  r.header.timeout_ms = static_cast<std::uint32_t>(
      std::min<std::int64_t>(left.count(), std::numeric_limits<std::uint32_t>::max()));
  call(r, Deadline::after(left + kReplyGrace, deadline.label()), r.keys, deadline);
}

std::int64_t TcpStore::do_add(std::string_view key, std::int64_t delta) {
  StoreRequest r;
  r.header.op = StoreOp::Add;
  r.key = key;
  r.delta = delta;
  const Deadline d = request_deadline("store add");
  const StoreValue v = call(r, d, {}, d);
  if (v.size() != 8)
    throw CollectiveError(CollectiveErrorKind::PeerLost,
                          str(describe(), ": malformed Add reply of ", v.size(), " bytes"));
  std::uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u |= std::uint64_t{v[static_cast<std::size_t>(i)]} << (8 * i);
  return static_cast<std::int64_t>(u);
}

StoreValue TcpStore::do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                                    std::span<const std::uint8_t> desired) {
  StoreRequest r;
  r.header.op = StoreOp::CompareSet;
  r.key = key;
  r.expected.assign(expected.begin(), expected.end());
  r.value.assign(desired.begin(), desired.end());
  const Deadline d = request_deadline("store compare_set");
  return call(r, d, {}, d);
}

bool TcpStore::do_remove(std::string_view key) {
  StoreRequest r;
  r.header.op = StoreOp::Remove;
  r.key = key;
  const Deadline d = request_deadline("store remove");
  const StoreValue v = call(r, d, {}, d);
  return v.size() == 1 && v[0] == 1;
}

bool TcpStore::do_check(std::span<const std::string> keys) {
  StoreRequest r;
  r.header.op = StoreOp::Check;
  r.keys.assign(keys.begin(), keys.end());
  const Deadline d = request_deadline("store check");
  const StoreValue v = call(r, d, {}, d);
  return v.size() == 1 && v[0] == 1;
}

namespace {

// Rank 0's store: the server and a client of it, destroyed client first.
class ServedTcpStore final : public Store {
 public:
  ServedTcpStore(const net::Endpoint& at, const SessionId& session, const Deadline& deadline,
                 const std::optional<JobSecret>& secret, int rank)
      : server_(std::make_unique<TcpStoreServer>(at.host, at.port, session, secret)) {
    net::Endpoint to = server_->endpoint();
    if (to.host == "0.0.0.0") to.host = "127.0.0.1";  // a wildcard listener: talk over loopback
    if (to.host == "::") to.host = "::1";
    client_ =
        std::make_unique<TcpStore>(to, session, deadline, std::chrono::seconds(300), secret, rank);
  }
  std::string describe() const override {
    return str("TcpStore served at ", server_->endpoint().to_string());
  }

 protected:
  void do_set(std::string_view key, std::span<const std::uint8_t> value) override {
    client_->set(key, value);
  }
  StoreValue do_get(std::string_view key, const Deadline& deadline) override {
    return client_->get(key, deadline);
  }
  void do_wait(std::span<const std::string> keys, const Deadline& deadline) override {
    client_->wait(keys, deadline);
  }
  std::int64_t do_add(std::string_view key, std::int64_t delta) override {
    return client_->add(key, delta);
  }
  StoreValue do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                            std::span<const std::uint8_t> desired) override {
    return client_->compare_set(key, expected, desired);
  }
  bool do_remove(std::string_view key) override { return client_->remove(key); }
  bool do_check(std::span<const std::string> keys) override { return client_->check(keys); }

 private:
  std::unique_ptr<TcpStoreServer> server_;  // declared first: destroyed after the client
  std::unique_ptr<TcpStore> client_;
};

}  // namespace

std::unique_ptr<Store> make_tcp_store(const net::Endpoint& at, const SessionId& session,
                                      bool is_server, const Deadline& connect_deadline,
                                      const std::optional<JobSecret>& secret, int rank) {
  if (is_server) {
    return std::make_unique<ServedTcpStore>(at, session, connect_deadline, secret, rank);
  }
  return std::make_unique<TcpStore>(at, session, connect_deadline, std::chrono::seconds(300),
                                    secret, rank);
}

}  // namespace ruccl
