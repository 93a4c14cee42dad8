#pragma once
// Store: the key/value rendezvous below everything that crosses a process (PyTorch c10d's Store,
// gloo's rendezvous). Ranks publish their addresses under keys, wait for each other's, count
// arrivals with add() and elect with compare_set(). Keys are text (1 .. kMaxStoreKeyBytes bytes),
// values are bytes (at most kMaxStoreValueBytes). Every wait takes a Deadline.
//
// Implementations: InMemoryStore (threads of one process), FileStore (a shared folder),
// TcpStore (a client of a TcpStoreServer that rank 0 or the launcher serves). Every store of a
// job is bound to the job's 128-bit random SessionId: a FileStore folder or a TcpStoreServer of
// another session refuses the connection, and learns nothing.
//
//   std::unique_ptr<Store> store = make_tcp_store(at, session, rank == 0, Deadline::after(60s));
//   store->set("addr/" + std::to_string(rank), my_address);
//   store->wait({"addr/0", "addr/1"}, Deadline::after(60s));
//   std::string peer = store->get_string("addr/1", Deadline::after(60s));
//
// Errors (CollectiveError): Timeout naming the keys still missing; InvalidArgument for a key or
// value over its cap (naming the cap) or add() on a value that is not an integer; InvalidConfig
// for a store of another session; PeerLost when a TcpStore's server goes away.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collective/common/deadline.h"
#include "collective/common/session_id.h"  // SessionId, random_session_id, session_id_to_hex

namespace ruccl {

/// The longest key, in bytes.
inline constexpr std::size_t kMaxStoreKeyBytes = 4096;
/// The largest value, in bytes (64 MiB: rendezvous data, not tensors).
inline constexpr std::size_t kMaxStoreValueBytes = std::size_t{64} << 20;
/// The most keys one wait() or check() may name.
inline constexpr std::size_t kMaxStoreWaitKeys = 4096;

using StoreValue = std::vector<std::uint8_t>;

/// The rendezvous key/value store (see the file comment). Implementations are thread-safe.
class Store {
 public:
  virtual ~Store() = default;

  /// Stores `value` under `key` (replacing any value) and wakes the waiters of `key`.
  void set(std::string_view key, std::span<const std::uint8_t> value);
  void set(std::string_view key, std::string_view value);
  /// The value of `key`, waiting until some rank sets it; Timeout naming the key at `deadline`.
  StoreValue get(std::string_view key, const Deadline& deadline);
  std::string get_string(std::string_view key, const Deadline& deadline);
  /// Waits until every key exists; Timeout naming the keys still missing at `deadline`.
  void wait(std::span<const std::string> keys, const Deadline& deadline);
  void wait(std::initializer_list<std::string> keys, const Deadline& deadline) {
    wait(std::span<const std::string>(keys.begin(), keys.size()), deadline);
  }
  /// Atomically adds `delta` to the integer stored under `key` (decimal text; a missing key counts
  /// as 0) and returns the new value. InvalidArgument when the value is not a decimal int64 or the
  /// sum overflows.
  std::int64_t add(std::string_view key, std::int64_t delta);
  /// c10d's compareSet: if `key` holds `expected`, store `desired`; if `key` is missing and
  /// `expected` is empty, store `desired`. Returns the value stored afterwards, except for a
  /// missing key with a non-empty `expected`, which stays missing and returns `expected` (as c10d
  /// does). The caller succeeded exactly when the result equals `desired` (for desired !=
  /// expected).
  StoreValue compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                         std::span<const std::uint8_t> desired);
  /// Deletes `key`; returns whether it existed. (The issue's `delete`, a C++ keyword.)
  bool remove(std::string_view key);
  /// Whether every key exists now (never waits).
  bool check(std::span<const std::string> keys);
  bool check(std::initializer_list<std::string> keys) {
    return check(std::span<const std::string>(keys.begin(), keys.size()));
  }

  /// What this store is, for messages: "InMemoryStore", "FileStore /shared/job",
  /// "TcpStore 127.0.0.1:29500".
  virtual std::string describe() const = 0;

 protected:
  // The checked operations: keys and values are within their caps when these run.
  virtual void do_set(std::string_view key, std::span<const std::uint8_t> value) = 0;
  virtual StoreValue do_get(std::string_view key, const Deadline& deadline) = 0;
  virtual void do_wait(std::span<const std::string> keys, const Deadline& deadline) = 0;
  virtual std::int64_t do_add(std::string_view key, std::int64_t delta) = 0;
  virtual StoreValue do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                                    std::span<const std::uint8_t> desired) = 0;
  virtual bool do_remove(std::string_view key) = 0;
  virtual bool do_check(std::span<const std::string> keys) = 0;
};

namespace store_detail {

/// InvalidArgument unless `key` has 1 .. kMaxStoreKeyBytes bytes (`op` names the call).
void check_key(std::string_view op, std::string_view key);
/// InvalidArgument unless `n` <= kMaxStoreValueBytes, naming the cap.
void check_value_size(std::string_view op, std::string_view key, std::size_t n);
/// check_key on each key, and at most kMaxStoreWaitKeys keys.
void check_keys(std::string_view op, std::span<const std::string> keys);
/// The Timeout of a get/wait: "<store>: wait (<label>): keys 'a', 'b' not set within 200 ms".
[[noreturn]] void throw_keys_timeout(const std::string& store, std::string_view op,
                                     const std::vector<std::string>& missing,
                                     const Deadline& deadline);
/// The result of add(): `current` (decimal text, or empty = 0) + delta as text; InvalidArgument
/// naming the key when `current` is not a decimal int64 or the sum overflows.
std::int64_t add_to_text(const std::string& store, std::string_view key,
                         std::span<const std::uint8_t> current, std::int64_t delta);
/// "'a', 'b'" (each key cut at 64 characters, at most 16 keys then "and N more").
std::string quote_keys(const std::vector<std::string>& keys);

}  // namespace store_detail

}  // namespace ruccl
