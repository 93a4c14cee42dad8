// What only the TcpStore and FileStore must survive: strangers and broken clients on the TCP
// store's port (wrong session, garbage, truncated requests, huge lengths, silence), the server
// stopping under waiting clients, and a FileStore folder of another job.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <thread>

#include "collective/store/store_protocol.h"
#include "tests/collective/error_capture.h"
#include "tests/collective/store/store_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::uint8_t> encoded_get(const SessionId& session, const std::string& key) {
  StoreRequest r;
  r.header.op = StoreOp::Get;
  r.header.session = session;
  r.header.request_id = 1;
  r.key = key;
  std::vector<std::uint8_t> out;
  encode_store_request(r, out);
  return out;
}

// Sends `bytes` on a fresh raw connection and expects the server to close it without a single
// byte of reply.
void expect_closed_without_reply(const net::Endpoint& at, const std::vector<std::uint8_t>& bytes) {
  net::Socket raw = net::connect_tcp(at, Deadline::after(5s));
  net::write_all(raw, bytes.data(), bytes.size(), Deadline::after(5s));
  std::uint8_t byte = 0;
  const CollectiveError e = error_of([&] { net::read_exact(raw, &byte, 1, Deadline::after(5s)); });
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  CHECK(contains(e.what(), "0 of 1 bytes"));  // EOF, or a reset when bytes were left unread
}

void expect_still_serving(Store& good, const std::string& key) {
  good.set(key, "fine");
  CHECK(good.get_string(key, Deadline::after(5s)) == "fine");
}

void put_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

TEST_CASE("a client of another session is refused and learns nothing", "[collective][store]") {
  StoreUnderTest s(StoreKind::Tcp);
  s.store().set("secret", "value");
  const CollectiveError e =
      error_of([&] { TcpStore(s.server().endpoint(), random_session_id(), Deadline::after(5s)); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(e.what(), "the store at " + s.server().endpoint().to_string() +
                               " closed the connection: wrong session id or not a ruccl store"));
  // A well-formed request for an existing key with the wrong session gets no byte back.
  expect_closed_without_reply(s.server().endpoint(), encoded_get(random_session_id(), "secret"));
  CHECK(s.server().refused_connections() == 2);
  expect_still_serving(s.store(), "after-wrong-session");
}

TEST_CASE("garbage and truncated or oversized requests close only their own connection",
          "[collective][store]") {
  StoreUnderTest s(StoreKind::Tcp);
  const net::Endpoint at = s.server().endpoint();
  const std::vector<std::uint8_t> good = encoded_get(s.session(), "k");

  std::vector<std::uint8_t> garbage(100);
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<std::uint8_t>(i * 37 + 11);
  expect_closed_without_reply(at, garbage);

  std::vector<std::uint8_t> http = {'G', 'E', 'T', ' ', '/', ' ',  'H',  'T',  'T',
                                    'P', '/', '1', '.', '1', '\r', '\n', '\r', '\n'};
  http.resize(kStoreRequestHeaderBytes, ' ');
  expect_closed_without_reply(at, http);

  std::vector<std::uint8_t> version = good;
  version[4] = 2;
  expect_closed_without_reply(at, version);

  std::vector<std::uint8_t> huge_value = good;
  huge_value[6] = static_cast<std::uint8_t>(StoreOp::Set);
  put_u32(huge_value, 40, 0xFFFFFFFFu);  // 4 GiB announced: refused before anything is read
  expect_closed_without_reply(at, huge_value);

  std::vector<std::uint8_t> huge_key = good;
  put_u32(huge_key, 36, kMaxStoreKeyBytes + 1);
  expect_closed_without_reply(at, huge_key);

  // A Wait whose key list inside a complete body is cut short.
  StoreRequest w;
  w.header.op = StoreOp::Wait;
  w.header.session = s.session();
  w.header.request_id = 1;
  w.keys = {"abc"};
  std::vector<std::uint8_t> bad_list;
  encode_store_request(w, bad_list);
  bad_list[kStoreRequestHeaderBytes] = 9;  // the key claims 9 bytes, 3 follow
  expect_closed_without_reply(at, bad_list);

  // A request cut off by the client closing its end: the server drops it and carries on.
  {
    net::Socket raw = net::connect_tcp(at, Deadline::after(5s));
    net::write_all(raw, good.data(), good.size() - 1, Deadline::after(5s));
  }
  CHECK(s.server().refused_connections() == 6);
  expect_still_serving(s.store(), "after-garbage");
}

TEST_CASE("a silent or slow client does not hold up the others", "[collective][store]") {
  StoreUnderTest s(StoreKind::Tcp);
  const net::Endpoint at = s.server().endpoint();
  // One connects and says nothing; one sends half a header; one announces a large Set and
  // sends it a byte at a time.
  net::Socket silent = net::connect_tcp(at, Deadline::after(5s));
  net::Socket half = net::connect_tcp(at, Deadline::after(5s));
  const std::vector<std::uint8_t> get = encoded_get(s.session(), "x");
  net::write_all(half, get.data(), 20, Deadline::after(5s));
  StoreRequest big;
  big.header.op = StoreOp::Set;
  big.header.session = s.session();
  big.header.request_id = 1;
  big.key = "slow";
  big.value.assign(1 << 20, 7);
  std::vector<std::uint8_t> slow_bytes;
  encode_store_request(big, slow_bytes);
  net::Socket slow = net::connect_tcp(at, Deadline::after(5s));
  net::write_all(slow, slow_bytes.data(), kStoreRequestHeaderBytes + 10, Deadline::after(5s));

  const auto start = Clock::now();
  for (int i = 0; i < 50; ++i) expect_still_serving(s.store(), "busy-" + std::to_string(i));
  CHECK(Clock::now() - start < 2s);
  // The slow one finishes later and is served too.
  net::write_all(slow, slow_bytes.data() + kStoreRequestHeaderBytes + 10,
                 slow_bytes.size() - kStoreRequestHeaderBytes - 10, Deadline::after(5s));
  CHECK(s.store().get("slow", Deadline::after(5s)) == big.value);
  CHECK(s.server().refused_connections() == 0);
}

TEST_CASE("stopping the server wakes a waiting client with PeerLost", "[collective][store]") {
  StoreUnderTest s(StoreKind::Tcp);
  auto waiter = s.connect();
  const std::string where = s.server().endpoint().to_string();
  std::optional<CollectiveError> got;
  Clock::duration waited{};
  std::thread t([&] {
    const auto start = Clock::now();
    try {
      waiter->get("never", Deadline::after(30s));
    } catch (const CollectiveError& e) {
      got = e;
    }
    waited = Clock::now() - start;
  });
  std::this_thread::sleep_for(100ms);
  s.stop_server();
  t.join();
  REQUIRE(got.has_value());
  CHECK(got->kind() == CollectiveErrorKind::PeerLost);
  CHECK(contains(got->what(), "the store at " + where + " closed the connection"));
  CHECK(waited < 5s);
  // Every later call fails the same way, at once.
  const CollectiveError later = error_of([&] { waiter->set("k", "v"); });
  CHECK(later.kind() == CollectiveErrorKind::PeerLost);
}

TEST_CASE("a TcpStore with no server times out at its connect deadline naming the endpoint",
          "[collective][store]") {
  net::Socket probe = net::listen_tcp("127.0.0.1", 0);
  const net::Endpoint at = net::local_endpoint(probe);
  probe.close();
  const CollectiveError e =
      error_of([&] { TcpStore(at, random_session_id(), Deadline::after(200ms)); });
  CHECK(e.kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(e.what(), at.to_string()));
}

TEST_CASE("make_tcp_store serves from rank 0 and connects the other ranks", "[collective][store]") {
  const SessionId session = random_session_id();
  net::Socket probe = net::listen_tcp("127.0.0.1", 0);
  const net::Endpoint at = net::local_endpoint(probe);
  probe.close();
  std::unique_ptr<Store> rank1;
  std::thread late([&] { rank1 = make_tcp_store(at, session, false, Deadline::after(10s)); });
  std::this_thread::sleep_for(50ms);  // rank 1 tries before rank 0 is up
  std::unique_ptr<Store> rank0 = make_tcp_store(at, session, true, Deadline::after(10s));
  late.join();
  REQUIRE(rank1);
  rank1->set("addr/1", "b");
  rank0->set("addr/0", "a");
  rank0->wait({"addr/0", "addr/1"}, Deadline::after(5s));
  CHECK(rank1->get_string("addr/0", Deadline::after(5s)) == "a");
  CHECK(contains(rank0->describe(), at.to_string()));
  rank1.reset();
}

TEST_CASE("a FileStore folder of another session is refused naming both sessions",
          "[collective][store]") {
  TemporaryFolder folder;
  const SessionId mine = random_session_id();
  const SessionId theirs = random_session_id();
  {
    FileStore first(folder.path(), mine);
    first.set("k", "v");
  }
  FileStore again(folder.path(), mine);  // the same job reopens it
  CHECK(again.get_string("k", Deadline::after(1s)) == "v");
  const CollectiveError e = error_of([&] { FileStore(folder.path(), theirs); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(e.what(), session_id_to_hex(mine)));
  CHECK(contains(e.what(), session_id_to_hex(theirs)));
}

TEST_CASE("FileStore key files have safe names and a corrupted one is an error naming it",
          "[collective][store]") {
  TemporaryFolder folder;
  FileStore store(folder.path(), random_session_id());
  const std::string long_a = std::string(3000, '/') + "a";
  const std::string long_b = std::string(3000, '/') + "b";
  for (const std::string& key :
       {std::string("../../etc/passwd"), std::string("A/b c"), long_a, long_b}) {
    store.set(key, key.substr(key.size() - 1));
    const auto path = store.key_path(key);
    CHECK(path.parent_path() == folder.path());
    CHECK(path.filename().string().size() <= 150);
    CHECK(path.filename().string().find('/') == std::string::npos);
  }
  CHECK(store.key_path(long_a) != store.key_path(long_b));
  CHECK(store.get_string(long_a, Deadline::after(1s)) == "a");
  CHECK(store.get_string(long_b, Deadline::after(1s)) == "b");
  CHECK(store.get_string("../../etc/passwd", Deadline::after(1s)) == "d");
  std::ofstream(store.key_path("broken"), std::ios::binary) << "not a store file";
  const CollectiveError e = error_of([&] { store.get("broken", Deadline::after(1s)); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(e.what(), store.key_path("broken").string()));
}

TEST_CASE("a TcpStore is served and reached over IPv6 loopback", "[collective][store]") {
  const SessionId session = random_session_id();
  std::unique_ptr<TcpStoreServer> server;
  try {
    server = std::make_unique<TcpStoreServer>("::1", 0, session);
  } catch (const CollectiveError& e) {
    WARN("no IPv6 loopback here, skipped: " << e.what());
    return;
  }
  CHECK(server->endpoint().host == "::1");
  TcpStore client(server->endpoint(), session, Deadline::after(5s));
  CHECK(client.describe() == "TcpStore [::1]:" + std::to_string(server->endpoint().port));
  client.set("v6", "yes");
  CHECK(client.get_string("v6", Deadline::after(5s)) == "yes");
  CHECK(client.add("n", 2) == 2);
}
