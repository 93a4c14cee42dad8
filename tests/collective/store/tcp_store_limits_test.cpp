// What one TcpStoreServer holds at most (TcpStoreLimits): keys and values in all, and connections
// of one address stuck in their handshake; write-once keys cannot be removed. Each refusal is a
// clear error to that client, and the store serves on.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "collective/store/tcp_store.h"
#include "collective/store/tcp_store_server.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

TEST_CASE("a store refuses a value that would pass its total cap, naming it, and serves on",
          "[collective][store][security]") {
  const SessionId session = random_session_id();
  TcpStoreLimits limits;
  limits.total_bytes = 1000;
  TcpStoreServer server("127.0.0.1", 0, session, std::nullopt, limits);
  TcpStore client(server.endpoint(), session, Deadline::after(5s));
  client.set("a", std::string(600, 'x'));  // 601 bytes with its key
  const CollectiveError e = error_of([&] { client.set("b", std::string(600, 'y')); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(),
                 "TcpStoreServer: storing 600 bytes under \"b\" refused: the store "
                 "would hold 1202 bytes, over its cap of 1000"));
  CHECK_FALSE(client.check({"b"}));
  client.set("a", std::string(900, 'z'));  // replacing counts the old value out
  CHECK(client.get_string("a", Deadline::after(5s)) == std::string(900, 'z'));
  CHECK(client.remove("a"));
  client.set("b", std::string(600, 'y'));  // room again
  CHECK(client.get_string("b", Deadline::after(5s)).size() == 600);
}

TEST_CASE("a flood of silent connections from one address holds a bounded number of them",
          "[collective][store][security]") {
  const SessionId session = random_session_id();
  TcpStoreLimits limits;
  limits.pending_per_address = 3;
  TcpStoreServer server("127.0.0.1", 0, session, std::nullopt, limits);
  std::vector<net::Socket> silent;
  for (int i = 0; i < 3; ++i)
    silent.push_back(net::connect_tcp(server.endpoint(), Deadline::after(5s)));
  std::this_thread::sleep_for(300ms);  // past the grace: now they count
  net::Socket fourth = net::connect_tcp(server.endpoint(), Deadline::after(5s));
  // The oldest is closed at once (well before the 5 s handshake deadline)...
  std::uint8_t byte = 0;
  const CollectiveError closed =
      error_of([&] { net::read_exact(silent[0], &byte, 1, Deadline::after(2s)); });
  CHECK(closed.kind() == CollectiveErrorKind::PeerLost);
  CHECK(server.refused_connections() == 1);
  // ...and a real client still comes in and is served.
  TcpStore client(server.endpoint(), session, Deadline::after(5s));
  client.set("k", "v");
  CHECK(client.get_string("k", Deadline::after(5s)) == "v");
}

TEST_CASE("a write-once key cannot be removed", "[collective][store][security]") {
  const SessionId session = random_session_id();
  TcpStoreServer server("127.0.0.1", 0, session);
  TcpStore client(server.endpoint(), session, Deadline::after(5s));
  client.set("ruccl/tcp/addr/0", "127.0.0.1:4000");
  const CollectiveError e = error_of([&] { client.remove("ruccl/tcp/addr/0"); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(),
                 "store key \"ruccl/tcp/addr/0\" is written once per attempt: it cannot "
                 "be removed (from 127.0.0.1:"));
  const std::string was = "127.0.0.1:4000", now = "127.0.0.1:6666";
  const auto bytes = [](const std::string& s) {
    return std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  };
  const CollectiveError swap =
      error_of([&] { client.compare_set("ruccl/tcp/addr/0", bytes(was), bytes(now)); });
  CHECK(contains(swap.what(), "is written once per attempt"));
  CHECK(client.get_string("ruccl/tcp/addr/0", Deadline::after(5s)) == "127.0.0.1:4000");
}
