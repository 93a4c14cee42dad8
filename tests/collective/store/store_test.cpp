// The Store behaviour table, run over every store: InMemoryStore, FileStore and TcpStore (a
// client of a TcpStoreServer on 127.0.0.1). Set/get, waits that wake on a later set or time out
// at their deadline naming the missing keys, atomic add from threads and from other processes,
// compare_set as c10d defines it, remove, check, and the caps on keys and values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "tests/collective/error_capture.h"
#include "tests/collective/store/store_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

StoreValue bytes(std::string_view s) { return StoreValue(s.begin(), s.end()); }

StoreKind any_kind() { return GENERATE(StoreKind::InMemory, StoreKind::File, StoreKind::Tcp); }

}  // namespace

TEST_CASE("a value set under a key is got back byte for byte and a second set replaces it",
          "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  Store& store = s.store();
  const StoreValue binary = {0, 1, 2, 255, 0, 128};
  store.set("rank/0/addr", binary);
  CHECK(store.get("rank/0/addr", Deadline::after(5s)) == binary);
  store.set("rank/0/addr", "10.0.0.1:4000");
  CHECK(store.get_string("rank/0/addr", Deadline::after(5s)) == "10.0.0.1:4000");
  store.set("empty", StoreValue{});
  CHECK(store.get("empty", Deadline::after(5s)).empty());
  // Keys are any bytes: slashes, dots, capitals, spaces, a NUL.
  const std::string odd("../A b/\0x", 9);
  store.set(odd, "odd");
  CHECK(store.get_string(odd, Deadline::after(5s)) == "odd");
  CHECK_FALSE(store.check({"../A b/"}));
  // Another client of the same store sees it.
  auto other = s.connect();
  CHECK(s.of(other).get_string("rank/0/addr", Deadline::after(5s)) == "10.0.0.1:4000");
}

TEST_CASE("a get waits for a set made later by another thread", "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  auto other = s.connect();
  Store& writer = s.of(other);
  std::thread late([&] {
    std::this_thread::sleep_for(100ms);
    writer.set("late", "here");
    std::this_thread::sleep_for(50ms);
    s.store().set("late2", "also");  // through the same client as the waiting thread
  });
  const auto start = Clock::now();
  CHECK(s.store().get_string("late", Deadline::after(10s)) == "here");
  CHECK(Clock::now() - start >= 90ms);
  s.store().wait({"late", "late2"}, Deadline::after(10s));
  late.join();
  CHECK(s.store().get_string("late2", Deadline::after(1s)) == "also");
}

TEST_CASE("get and wait time out at their deadline naming only the keys still missing",
          "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  Store& store = s.store();
  store.set("present", "1");
  auto start = Clock::now();
  CollectiveError e = error_of([&] { store.get("absent", Deadline::after(250ms, "rendezvous")); });
  auto elapsed = Clock::now() - start;
  CHECK(e.kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(e.what(), "key 'absent' not set within 250 ms"));
  CHECK(contains(e.what(), "rendezvous"));
  CHECK(contains(e.what(), store.describe()));
  CHECK(elapsed >= 250ms);
  CHECK(elapsed < 1500ms);

  start = Clock::now();
  e = error_of([&] { store.wait({"present", "b", "c"}, Deadline::after(200ms)); });
  elapsed = Clock::now() - start;
  CHECK(e.kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(e.what(), "keys 'b', 'c' not set"));
  CHECK_FALSE(contains(e.what(), "present"));
  CHECK(elapsed >= 200ms);
  CHECK(elapsed < 1500ms);

  // A deadline already passed still answers with what is there.
  CHECK(store.get_string("present", Deadline::after(0ms)) == "1");
  store.wait({"present"}, Deadline::after(0ms));
  store.wait({}, Deadline::after(0ms));
}

TEST_CASE("add from 8 threads gives every caller a distinct new value and loses none",
          "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  constexpr int kThreads = 8;
  const int per_thread = s.kind() == StoreKind::File ? 25 : 200;  // FileStore: an fsync per add
  std::vector<std::unique_ptr<Store>> clients;
  for (int t = 0; t < kThreads / 2; ++t) clients.push_back(s.connect());  // half share one client
  std::vector<std::vector<std::int64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? s.store() : s.of(clients[static_cast<std::size_t>(t / 2)]);
      for (int i = 0; i < per_thread; ++i)
        got[static_cast<std::size_t>(t)].push_back(store.add("counter", 1));
    });
  for (auto& t : threads) t.join();
  std::set<std::int64_t> all;
  for (const auto& g : got) all.insert(g.begin(), g.end());
  CHECK(all.size() == static_cast<std::size_t>(kThreads * per_thread));
  CHECK(*all.begin() == 1);
  CHECK(*all.rbegin() == kThreads * per_thread);
  CHECK(s.store().add("counter", 0) == kThreads * per_thread);
  CHECK(s.store().add("counter", -5) == kThreads * per_thread - 5);
  CHECK(s.store().get_string("counter", Deadline::after(1s)) ==
        std::to_string(kThreads * per_thread - 5));
}

TEST_CASE("add from two other processes and this one is atomic across processes",
          "[collective][store]") {
  const StoreKind kind = GENERATE(StoreKind::File, StoreKind::Tcp);
  StoreUnderTest s(kind);
  INFO(store_kind_name(kind));
  const int count = kind == StoreKind::File ? 40 : 300;
  std::vector<pid_t> pids;
  for (int p = 0; p < 2; ++p) {
    std::vector<std::string> argv = {RUCCL_STORE_ADD_HELPER};
    for (const std::string& a : s.helper_args()) argv.push_back(a);
    argv.push_back(session_id_to_hex(s.session()));
    argv.push_back("procs");
    argv.push_back(std::to_string(count));
    pids.push_back(spawn(argv));
    REQUIRE(pids.back() > 0);
  }
  for (int i = 0; i < count; ++i) s.store().add("procs", 1);
  for (const pid_t pid : pids) CHECK(wait_exit(pid) == 0);
  CHECK(s.store().add("procs", 0) == 3 * count);
}

TEST_CASE("add to a value that is not a decimal integer is InvalidArgument naming the key",
          "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  s.store().set("word", "twelve");
  CollectiveError e = error_of([&] { s.store().add("word", 1); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(), "'word'"));
  CHECK(contains(e.what(), "expected a decimal int64 value, got 'twelve'"));
  s.store().set("big", std::to_string(INT64_MAX));
  e = error_of([&] { s.store().add("big", 1); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(), "overflows"));
  CHECK(s.store().get_string("big", Deadline::after(1s)) == std::to_string(INT64_MAX));
}

TEST_CASE("compare_set swaps only on a match and reports what is stored as c10d does",
          "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  Store& store = s.store();
  // Missing key, non-empty expected: nothing stored, `expected` returned.
  CHECK(store.compare_set("leader", bytes("x"), bytes("rank1")) == bytes("x"));
  CHECK_FALSE(store.check({"leader"}));
  // Missing key, empty expected: created.
  CHECK(store.compare_set("leader", {}, bytes("rank1")) == bytes("rank1"));
  // Mismatch: unchanged, the current value returned.
  CHECK(store.compare_set("leader", {}, bytes("rank2")) == bytes("rank1"));
  CHECK(store.compare_set("leader", bytes("rank3"), bytes("rank2")) == bytes("rank1"));
  // Match: swapped.
  CHECK(store.compare_set("leader", bytes("rank1"), bytes("rank2")) == bytes("rank2"));
  CHECK(store.get("leader", Deadline::after(1s)) == bytes("rank2"));
  // A compare_set that creates a key wakes its waiters.
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    store.compare_set("elected", {}, bytes("yes"));
  });
  CHECK(store.get("elected", Deadline::after(10s)) == bytes("yes"));
  t.join();
}

TEST_CASE("remove deletes a key once and check sees keys without waiting", "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  Store& store = s.store();
  CHECK_FALSE(store.remove("k"));
  CHECK_FALSE(store.check({"k"}));
  store.set("k", "v");
  store.set("j", "w");
  CHECK(store.check({"k"}));
  CHECK(store.check({"k", "j"}));
  CHECK_FALSE(store.check({"k", "nope"}));
  CHECK(store.check({}));
  CHECK(store.remove("k"));
  CHECK_FALSE(store.remove("k"));
  CHECK_FALSE(store.check({"k"}));
  CHECK(error_of([&] { store.get("k", Deadline::after(50ms)); }).kind() ==
        CollectiveErrorKind::Timeout);
  CHECK(store.add("k", 3) == 3);  // a removed counter starts again from 0
}

TEST_CASE("values up to the cap are stored and larger values or keys are refused naming the cap",
          "[collective][store]") {
  StoreUnderTest s(any_kind());
  INFO(store_kind_name(s.kind()));
  Store& store = s.store();
  StoreValue big(kMaxStoreValueBytes);
  for (std::size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<std::uint8_t>(i / 4099);
  store.set("big", big);
  CHECK(store.get("big", Deadline::after(30s)) == big);
  big.push_back(1);
  CollectiveError e = error_of([&] { store.set("big", big); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(), "over the cap of 67108864 bytes"));
  e = error_of([&] { store.compare_set("big", {}, big); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(store.get("big", Deadline::after(30s)).size() == kMaxStoreValueBytes);
  big = {};

  const std::string longest(kMaxStoreKeyBytes, 'K');
  store.set(longest, "ok");
  CHECK(store.get_string(longest, Deadline::after(5s)) == "ok");
  e = error_of([&] { store.set(longest + "K", "no"); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(), "over the cap of 4096"));
  e = error_of([&] { store.get("", Deadline::after(1s)); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(), "empty key"));
  const std::vector<std::string> too_many(kMaxStoreWaitKeys + 1, "k");
  e = error_of([&] { store.check(too_many); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
}

TEST_CASE("session ids are 128 random bits written as 32 hex digits", "[collective][store]") {
  const SessionId a = random_session_id();
  const SessionId b = random_session_id();
  CHECK(a != b);
  const std::string hex = session_id_to_hex(a);
  CHECK(hex.size() == 32);
  CHECK(parse_session_id(hex) == a);
  SessionId up{};
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<std::uint8_t>(0xA0 + i);
  CHECK(session_id_to_hex(up) == "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  CHECK(parse_session_id("A0A1A2A3A4A5A6A7A8A9AAABACADAEAF") == up);
  for (const char* bad :
       {"", "a0", "a0a1a2a3a4a5a6a7a8a9aaabacadaeafff", "g0a1a2a3a4a5a6a7a8a9aaabacadaeaf"}) {
    const CollectiveError e = error_of([&] { parse_session_id(bad); });
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK(contains(e.what(), "expected 32 hex digits"));
  }
}
