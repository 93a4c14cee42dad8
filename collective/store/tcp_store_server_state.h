#pragma once
// The serving thread's state of a TcpStoreServer (tcp_store_server.h), shared by its two files:
// tcp_store_server.cpp (the poll loop: accepting, reading, writing, silent connections) and
// tcp_store_server_requests.cpp (what it does with each request and handshake message). Internal
// to collective/store/.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collective/net/peer_auth.h"
#include "collective/store/store_protocol.h"
#include "collective/store/tcp_store_server.h"

namespace ruccl {

namespace store_server_detail {

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
// A connection counts against TcpStoreLimits::pending_per_address once it has been in its
// handshake this long (a real client needs microseconds, a busy server a few milliseconds).
constexpr auto kPendingGrace = std::chrono::milliseconds(250);

/// Where a connection is in its authentication (net/peer_auth.h; only with a secret).
enum class AuthStage : std::uint8_t { Challenge, Proof, Done };

struct Client {
  net::Socket sock;
  std::string peer;                   // "127.0.0.1:40112", for refusals and write-once errors
  std::string host;                   // "127.0.0.1": the pending-connections cap is per address
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

}  // namespace store_server_detail

// The two files of the server use these names unqualified.
using namespace store_server_detail;

struct TcpStoreServer::State {
  SessionId session{};
  std::optional<JobSecret> secret;
  TcpStoreLimits limits;
  net::Socket listener;
  int wake_fd = -1;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> refused{0};
  std::thread thread;

  // Owned by the serving thread.
  std::map<std::uint64_t, Client> clients;
  std::uint64_t next_client = 1;
  std::map<std::string, StoreValue, std::less<>> values;
  std::size_t stored_bytes = 0;  // keys and values of `values`, against limits.total_bytes
  std::map<std::string, std::string, std::less<>> writers;  // write-once keys: who wrote each
  std::list<Parked> parked;
  Clock::time_point accept_paused_until{};

  void run();
  void accept_all();
  void read_from(Client& c, std::uint64_t id);
  void flush(Client& c);
  void handle(std::uint64_t client, StoreRequest& request);
  void reply(std::uint64_t client, std::uint64_t request_id, StoreStatus status, StoreValue value);
  /// An InvalidArgument reply carrying `what`.
  void reply_error(std::uint64_t client, std::uint64_t request_id, const std::string& what);
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
  /// Stores `value` under `key` for `client`: "" when done, else the message to send back
  /// (InvalidArgument): a different second value of a write-once key (naming both writers), or a
  /// total over limits.total_bytes.
  std::string put(std::uint64_t client, std::string key, StoreValue value);
  /// Removes `key`; whether it was there.
  bool erase(const std::string& key);
  /// When `host` has limits.pending_per_address connections stuck in their handshake (over
  /// kPendingGrace), closes the oldest: a flood from one address holds a bounded number of
  /// descriptors, and a real client (which passes its handshake at once) is never turned away.
  void evict_stale_handshakes(const std::string& host);
  /// "the writer" of a request of `client`: its address and, with a secret, its proven rank.
  std::string writer(std::uint64_t client) const;
  bool has_all(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(),
                       [&](const std::string& k) { return values.find(k) != values.end(); });
  }
  void answer_parked(Clock::time_point now);
  int poll_timeout_ms(Clock::time_point now) const;
};

}  // namespace ruccl
