// The socket helpers (collective/net/socket.h) on loopback: connect/accept/round trips, deadlines
// that expire on time naming the endpoint, a closed peer as PeerLost, endpoint parsing, and the
// interface lookup behind RUCCL_SOCKET_IFNAME.
#include <sys/socket.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <thread>
#include <vector>

#include "collective/net/socket.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace std::chrono_literals;
using ruccl::testing::contains;
using ruccl::testing::error_of;

namespace {

using Clock = std::chrono::steady_clock;

// A port of 127.0.0.1 on which nothing listens (bound once by us, then released).
std::uint16_t closed_port() {
  net::Socket probe = net::listen_tcp("127.0.0.1", 0);
  const std::uint16_t port = net::local_endpoint(probe).port;
  probe.close();
  return port;
}

struct Pair {
  net::Socket client;
  net::Socket server;
};

Pair connected_pair(const std::string& host = "127.0.0.1") {
  net::Socket listener = net::listen_tcp(host, 0);
  const net::Endpoint at = net::local_endpoint(listener);
  Pair p;
  p.client = net::connect_tcp(at, Deadline::after(5s));
  p.server = net::accept_tcp(listener, Deadline::after(5s));
  return p;
}

}  // namespace

TEST_CASE("a loopback listener gets an ephemeral port and carries bytes both ways",
          "[collective][net]") {
  net::Socket listener = net::listen_tcp("127.0.0.1", 0);
  const net::Endpoint at = net::local_endpoint(listener);
  CHECK(at.host == "127.0.0.1");
  CHECK(at.port != 0);
  net::Socket client = net::connect_tcp(at, Deadline::after(5s));
  net::Socket server = net::accept_tcp(listener, Deadline::after(5s));
  net::set_nodelay(client);
  net::set_keepalive(client, 1000ms, 3);
  CHECK(client.peer() == at.to_string());
  CHECK(server.peer() == net::peer_endpoint(server).to_string());
  CHECK(net::peer_endpoint(server) == net::local_endpoint(client));

  const char hello[] = "hello";
  net::write_all(client, hello, sizeof hello, Deadline::after(5s));
  char got[sizeof hello] = {};
  net::read_exact(server, got, sizeof got, Deadline::after(5s));
  CHECK(std::string(got) == "hello");
  std::uint32_t reply = 0xA1B2C3D4u, back = 0;
  net::write_all(server, &reply, sizeof reply, Deadline::after(5s));
  net::read_exact(client, &back, sizeof back, Deadline::after(5s));
  CHECK(back == reply);
}

namespace {
int buffer_option(const net::Socket& s, int option) {
  int got = 0;
  socklen_t len = sizeof got;
  REQUIRE(::getsockopt(s.fd(), SOL_SOCKET, option, &got, &len) == 0);
  return got;
}
}  // namespace

TEST_CASE("set_buffer_bytes sizes both socket buffers, which still carry bytes",
          "[collective][net]") {
  Pair p = connected_pair();
  const int before = buffer_option(p.client, SO_SNDBUF);
  const int bytes = 100 << 10;  // under the caps of a stock kernel (208 KiB)
  REQUIRE(net::max_buffer_bytes() >= bytes);
  REQUIRE(net::set_buffer_bytes(p.client, bytes));
  for (const int option : {SO_SNDBUF, SO_RCVBUF}) {
    CHECK(buffer_option(p.client, option) == 2 * bytes);  // the kernel doubles it
  }
  CHECK(before != 2 * bytes);
  std::vector<unsigned char> data(1 << 20);
  std::iota(data.begin(), data.end(), static_cast<unsigned char>(0));
  std::thread writer(
      [&] { net::write_all(p.client, data.data(), data.size(), Deadline::after(5s)); });
  std::vector<unsigned char> got(data.size());
  net::read_exact(p.server, got.data(), got.size(), Deadline::after(5s));
  writer.join();
  CHECK(got == data);
}

TEST_CASE("set_buffer_bytes above the kernel's caps leaves the buffers to autotuning",
          "[collective][net]") {
  Pair p = connected_pair();
  const int cap = net::max_buffer_bytes();
  REQUIRE(cap > 0);
  REQUIRE(cap < std::numeric_limits<int>::max());
  const int send = buffer_option(p.client, SO_SNDBUF);
  const int receive = buffer_option(p.client, SO_RCVBUF);
  CHECK_FALSE(net::set_buffer_bytes(p.client, cap + 1));
  CHECK_FALSE(net::set_buffer_bytes(p.client, 0));
  CHECK(buffer_option(p.client, SO_SNDBUF) == send);
  CHECK(buffer_option(p.client, SO_RCVBUF) == receive);
}

TEST_CASE("the helpers work over IPv6 loopback", "[collective][net]") {
  net::Socket listener;
  try {
    listener = net::listen_tcp("::1", 0);
  } catch (const CollectiveError& e) {
    WARN("no IPv6 loopback here, skipped: " << e.what());
    return;
  }
  const net::Endpoint at = net::local_endpoint(listener);
  CHECK(at.host == "::1");
  CHECK(at.to_string() == "[::1]:" + std::to_string(at.port));
  CHECK(net::parse_endpoint(at.to_string()) == at);
  net::Socket client = net::connect_tcp(at, Deadline::after(5s));
  net::Socket server = net::accept_tcp(listener, Deadline::after(5s));
  const std::uint64_t x = 0x0102030405060708ull;
  std::uint64_t y = 0;
  net::write_all(client, &x, sizeof x, Deadline::after(5s));
  net::read_exact(server, &y, sizeof y, Deadline::after(5s));
  CHECK(y == x);
}

TEST_CASE("a vectored write of several large buffers arrives whole and in order",
          "[collective][net]") {
  Pair p = connected_pair();
  std::vector<std::uint8_t> a(3 << 20), b(7), c(5 << 20);
  std::iota(a.begin(), a.end(), std::uint8_t{1});
  std::iota(b.begin(), b.end(), std::uint8_t{100});
  std::iota(c.begin(), c.end(), std::uint8_t{7});
  std::vector<std::uint8_t> got(a.size() + b.size() + c.size());
  std::thread reader(
      [&] { net::read_exact(p.server, got.data(), got.size(), Deadline::after(20s)); });
  const net::ConstBuffer parts[] = {
      {a.data(), a.size()}, {nullptr, 0}, {b.data(), b.size()}, {c.data(), c.size()}};
  net::write_all(p.client, parts, Deadline::after(20s));
  reader.join();
  CHECK(std::equal(a.begin(), a.end(), got.begin()));
  CHECK(std::equal(b.begin(), b.end(), got.begin() + static_cast<std::ptrdiff_t>(a.size())));
  CHECK(std::equal(c.begin(), c.end(), got.end() - static_cast<std::ptrdiff_t>(c.size())));
}

TEST_CASE("a connect to a closed port of 127.0.0.1 is retried until its deadline then names it",
          "[collective][net]") {
  const net::Endpoint to{"127.0.0.1", closed_port()};
  const auto start = Clock::now();
  const CollectiveError e = error_of([&] { net::connect_tcp(to, Deadline::after(300ms)); });
  const auto elapsed = Clock::now() - start;
  CHECK(e.kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(e.what(), to.to_string()));
  CHECK(contains(e.what(), "Connection refused"));
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 1500ms);  // the deadline plus at most one backoff step and scheduling slack
}

TEST_CASE("a connect succeeds when the server starts listening after the first attempts",
          "[collective][net]") {
  const std::uint16_t port = closed_port();
  net::Socket late;
  std::thread server([&] {
    std::this_thread::sleep_for(150ms);
    late = net::listen_tcp("127.0.0.1", port);
  });
  net::Socket client = net::connect_tcp({"127.0.0.1", port}, Deadline::after(10s));
  server.join();
  CHECK(client.valid());
  CHECK(net::accept_tcp(late, Deadline::after(5s)).valid());
}

TEST_CASE("a peer that closes the connection is PeerLost naming it", "[collective][net]") {
  Pair p = connected_pair();
  const std::string name = p.client.peer();
  p.server.close();
  char byte = 0;
  const CollectiveError e =
      error_of([&] { net::read_exact(p.client, &byte, 1, Deadline::after(5s)); });
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  CHECK(contains(e.what(), name));
  CHECK(contains(e.what(), "closed the connection"));

  // Writing to it fails too (EPIPE or ECONNRESET), without SIGPIPE killing the test.
  const std::vector<char> block(1 << 16, 'x');
  const CollectiveError w = error_of([&] {
    for (int i = 0; i < 1000; ++i)
      net::write_all(p.client, block.data(), block.size(), Deadline::after(5s));
  });
  CHECK(w.kind() == CollectiveErrorKind::PeerLost);
  CHECK(contains(w.what(), name));
}

TEST_CASE("an accept with nobody connecting times out at its deadline naming the listener",
          "[collective][net]") {
  net::Socket listener = net::listen_tcp("127.0.0.1", 0);
  const auto start = Clock::now();
  const CollectiveError e = error_of([&] { net::accept_tcp(listener, Deadline::after(200ms)); });
  CHECK(e.kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(e.what(), net::local_endpoint(listener).to_string()));
  CHECK(Clock::now() - start >= 200ms);
}

TEST_CASE("a read of bytes that never come times out saying how many came", "[collective][net]") {
  Pair p = connected_pair();
  net::write_all(p.server, "ab", 2, Deadline::after(5s));
  char buf[8];
  const auto start = Clock::now();
  const CollectiveError e = error_of(
      [&] { net::read_exact(p.client, buf, sizeof buf, Deadline::after(200ms, "probe")); });
  CHECK(e.kind() == CollectiveErrorKind::Timeout);
  CHECK(contains(e.what(), "2 bytes done"));
  CHECK(contains(e.what(), "probe"));
  CHECK(Clock::now() - start >= 200ms);
  CHECK_FALSE(net::wait_readable(p.client, Deadline::after(20ms)));
}

TEST_CASE("endpoint texts parse and bad ones are InvalidConfig naming the text",
          "[collective][net]") {
  CHECK(net::parse_endpoint("127.0.0.1:29500") == net::Endpoint{"127.0.0.1", 29500});
  CHECK(net::parse_endpoint("node-7.cluster:0") == net::Endpoint{"node-7.cluster", 0});
  CHECK(net::parse_endpoint("[fe80::1%eth0]:65535") == net::Endpoint{"fe80::1%eth0", 65535});
  CHECK(net::Endpoint{"127.0.0.1", 29500}.to_string() == "127.0.0.1:29500");
  for (const char* bad :
       {"", "127.0.0.1", "127.0.0.1:", ":29500", "host:65536", "host:12a", "host:-1", "::1:29500",
        "[::1]29500", "[::1:29500", "[]:1", "host:123456"}) {
    const CollectiveError e = error_of([&] { net::parse_endpoint(bad); });
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK(contains(e.what(), std::string("'") + bad + "'"));
  }
}

TEST_CASE("listening on a port already taken is InvalidConfig naming host and port",
          "[collective][net]") {
  net::Socket first = net::listen_tcp("127.0.0.1", 0);
  const net::Endpoint at = net::local_endpoint(first);
  const CollectiveError e = error_of([&] { net::listen_tcp("127.0.0.1", at.port); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(e.what(), at.to_string()));
  CHECK(contains(e.what(), "Address already in use"));
}

TEST_CASE("the loopback interface lo has the address 127.0.0.1", "[collective][net]") {
  CHECK(net::interface_address("lo") == "127.0.0.1");
}

TEST_CASE("an unknown interface name is InvalidConfig listing the interfaces that exist",
          "[collective][net]") {
  const CollectiveError e = error_of([] { net::interface_address("no-such-if0"); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(e.what(), "'no-such-if0'"));
  CHECK(contains(e.what(), "interfaces here: "));
  CHECK(contains(e.what(), "lo"));
}

TEST_CASE("listeners bind to loopback unless RUCCL_SOCKET_IFNAME names an interface",
          "[collective][net]") {
  const char* saved = std::getenv("RUCCL_SOCKET_IFNAME");
  const std::string old = saved ? saved : "";
  unsetenv("RUCCL_SOCKET_IFNAME");
  CHECK(net::default_listen_host() == "127.0.0.1");
  setenv("RUCCL_SOCKET_IFNAME", "lo", 1);
  CHECK(net::default_listen_host() == "127.0.0.1");
  setenv("RUCCL_SOCKET_IFNAME", "no-such-if0", 1);
  const CollectiveError e = error_of([] { net::default_listen_host(); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(e.what(), "RUCCL_SOCKET_IFNAME=no-such-if0"));
  if (saved)
    setenv("RUCCL_SOCKET_IFNAME", old.c_str(), 1);
  else
    unsetenv("RUCCL_SOCKET_IFNAME");
}

TEST_CASE("Loopback addresses are told from the others", "[collective][net]") {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    INFO(host);
    CHECK(net::is_loopback_address(host));
  }
  for (const char* host :
       {"10.0.0.1", "128.0.0.1", "::2", "fe80::1", "::ffff:10.0.0.1", "", "1.127.0.0"}) {
    INFO(host);
    CHECK_FALSE(net::is_loopback_address(host));
  }
}
