#pragma once
// TcpStore: the client of a TcpStoreServer (tcp_store_server.h). Thread-safe: any number of
// threads may call it at once (each request carries an id; a reader thread hands each reply to
// its caller), so one thread's blocking get never holds up another's set.
//
//   // rank 0 serves and every rank connects (make_tcp_store does both for rank 0):
//   auto store = make_tcp_store({master_addr, master_port}, session, rank == 0,
//                               Deadline::after(60s, "rendezvous"));
//
// Errors: the connection refused by the server (another session, not a ruccl store) is
// InvalidConfig; the server gone later is PeerLost for every pending and later call (the client
// does not reconnect: a job whose store is gone is finished).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collective/common/job_secret.h"
#include "collective/net/socket.h"
#include "collective/store/store.h"
#include "collective/store/store_protocol.h"

namespace ruccl {

class TcpStoreServer;

class TcpStore final : public Store {
 public:
  /// Connects to `server` (retried until `connect_deadline`: the server may not be up yet) and
  /// proves `session` with a Hello. Timeout when nobody answers in time; InvalidConfig when the
  /// server closes the connection (wrong session id or not a ruccl store). `request_timeout`
  /// bounds every request that does not wait for keys (set, add, ...).
  /// With `secret`, the connection first authenticates both ways (net/peer_auth.h; `rank` is the
  /// rank this client proves it is, -1 for none): a server without the same secret is
  /// InvalidConfig "... failed authentication ...".
  TcpStore(net::Endpoint server, const SessionId& session, const Deadline& connect_deadline,
           std::chrono::milliseconds request_timeout = std::chrono::seconds(300),
           const std::optional<JobSecret>& secret = std::nullopt, int rank = -1);
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  std::string describe() const override { return "TcpStore " + server_.to_string(); }
  const net::Endpoint& server() const { return server_; }

 protected:
  void do_set(std::string_view key, std::span<const std::uint8_t> value) override;
  StoreValue do_get(std::string_view key, const Deadline& deadline) override;
  void do_wait(std::span<const std::string> keys, const Deadline& deadline) override;
  std::int64_t do_add(std::string_view key, std::int64_t delta) override;
  StoreValue do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                            std::span<const std::uint8_t> desired) override;
  bool do_remove(std::string_view key) override;
  bool do_check(std::span<const std::string> keys) override;

 private:
  struct Pending {
    bool done = false;
    StoreReply reply;
  };
  // Sends `request` (its id set here) and waits for its reply until `reply_by`; `keys` name
  // what a Timeout is about. Throws the reply's error status.
  StoreValue call(StoreRequest& request, const Deadline& reply_by,
                  const std::vector<std::string>& keys, const Deadline& user_deadline);
  Deadline request_deadline(const char* label) const {
    return Deadline::after(request_timeout_, label);
  }
  void read_replies();
  void fail(std::string why);  // the connection is unusable: every pending and later call throws

  net::Endpoint server_;
  SessionId session_;
  std::chrono::milliseconds request_timeout_;
  net::Socket sock_;
  std::mutex write_mutex_;  // one request on the wire at a time
  std::mutex mutex_;        // guards everything below
  std::condition_variable replied_;
  std::map<std::uint64_t, Pending*> pending_;
  std::uint64_t next_id_ = 1;
  bool hello_done_ = false;
  std::string failure_;  // non-empty once the connection failed
  std::thread reader_;
};

/// The job's store over TCP. `is_server` (rank 0): also serves it on at.host:at.port (the
/// returned store owns the server, which lives until it is destroyed: destroy rank 0's store
/// last). Every rank, the server's included, talks to it through a TcpStore client.
/// With `secret`, the server admits only clients that prove it, and every client proves it as
/// rank `rank`.
std::unique_ptr<Store> make_tcp_store(const net::Endpoint& at, const SessionId& session,
                                      bool is_server, const Deadline& connect_deadline,
                                      const std::optional<JobSecret>& secret = std::nullopt,
                                      int rank = -1);

}  // namespace ruccl
