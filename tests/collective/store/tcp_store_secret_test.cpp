// The TCP store of a job with a secret (docs/security.md): a client without the secret, with
// another one, or replaying a recorded handshake is refused and counted while the store serves
// its own clients on; address keys are written once; a silent connection is closed.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "collective/net/peer_auth.h"
#include "collective/store/tcp_store.h"
#include "collective/store/tcp_store_server.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

std::string read_or_closed(const net::Socket& s) {
  std::uint8_t byte = 0;
  try {
    net::read_exact(s, &byte, 1, Deadline::after(5s));
  } catch (const CollectiveError& e) {
    return e.kind() == CollectiveErrorKind::PeerLost ? "closed" : e.what();
  }
  return "a byte";
}

/// Waits (up to 5 s) until the server has refused `n` connections: it learns of a client that
/// gave up on it (closing) on its own thread.
std::uint64_t refused_by(const TcpStoreServer& server, std::uint64_t n) {
  const auto until = Clock::now() + 5s;
  while (server.refused_connections() < n && Clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  return server.refused_connections();
}

}  // namespace

TEST_CASE("a store with a secret refuses clients without it or with another, and serves on",
          "[collective][store][security]") {
  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  TcpStoreServer server("127.0.0.1", 0, session, secret);
  TcpStore mine(server.endpoint(), session, Deadline::after(5s), 300s, secret, 0);
  mine.set("ruccl/tcp/addr/0", "127.0.0.1:4000");

  const std::uint64_t before = net::auth_refusals();
  const CollectiveError none =
      error_of([&] { TcpStore(server.endpoint(), session, Deadline::after(5s)); });
  CHECK(none.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(none.what(), "closed the connection"));
  const CollectiveError other = error_of([&] {
    TcpStore(server.endpoint(), session, Deadline::after(5s), 300s, random_job_secret(), 1);
  });
  CHECK(other.kind() == CollectiveErrorKind::InvalidConfig);
  CHECK(contains(other.what(), "failed authentication: wrong MAC (it does not hold the secret)"));
  CHECK(contains(other.what(), "every rank needs the same RUCCL_JOB_SECRET"));
  // A server without the secret is no store for a client that has one, either.
  TcpStoreServer open_server("127.0.0.1", 0, session);
  const CollectiveError unproven = error_of(
      [&] { TcpStore(open_server.endpoint(), session, Deadline::after(5s), 300s, secret, 1); });
  CHECK(contains(unproven.what(), "failed authentication"));

  CHECK(refused_by(server, 2) == 2);
  CHECK(net::auth_refusals() >= before + 2);
  CHECK(contains(net::last_auth_refusal(), "store client 127.0.0.1:"));
  // Nothing changed for the job: its value is there and it still writes and reads.
  CHECK(mine.get_string("ruccl/tcp/addr/0", Deadline::after(5s)) == "127.0.0.1:4000");
  mine.set("after", "fine");
  CHECK(mine.get_string("after", Deadline::after(5s)) == "fine");
}

TEST_CASE("a replayed store handshake is refused", "[collective][store][security]") {
  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  TcpStoreServer server("127.0.0.1", 0, session, secret);
  const net::AuthBinding claim{net::AuthPurpose::Store, 1, -1, session};
  net::AuthMessage challenge;
  challenge.purpose = net::AuthPurpose::Store;
  challenge.from_rank = 1;
  challenge.nonce = net::auth_nonce();
  const auto c = net::encode_auth_message(challenge);
  std::array<std::uint8_t, net::kAuthMessageBytes> r{};
  net::AuthMessage response;
  // The recorded exchange: a real client's challenge and proof.
  net::Socket first = net::connect_tcp(server.endpoint(), Deadline::after(5s));
  net::write_all(first, c.data(), c.size(), Deadline::after(5s));
  net::read_exact(first, r.data(), r.size(), Deadline::after(5s));
  REQUIRE(net::decode_auth_message(r, response).empty());
  net::AuthMessage proof = response;
  proof.type = net::AuthMessageType::Proof;
  proof.mac = net::auth_mac(secret, false, claim, challenge.nonce, response.nonce);
  const auto p = net::encode_auth_message(proof);
  net::write_all(first, p.data(), p.size(), Deadline::after(5s));
  // Replayed on a second connection: the server's nonce differs, the proof does not match.
  net::Socket second = net::connect_tcp(server.endpoint(), Deadline::after(5s));
  net::write_all(second, c.data(), c.size(), Deadline::after(5s));
  net::read_exact(second, r.data(), r.size(), Deadline::after(5s));
  net::write_all(second, p.data(), p.size(), Deadline::after(5s));
  CHECK(read_or_closed(second) == "closed");
  CHECK(refused_by(server, 1) == 1);
  CHECK(contains(net::last_auth_refusal(), "claiming rank 1: wrong MAC"));
}

TEST_CASE("address and identity keys are written once per attempt, naming both writers",
          "[collective][store][security]") {
  CHECK(store_key_is_write_once("ruccl/tcp/addr/12"));
  CHECK(store_key_is_write_once("group3/host/0"));
  CHECK_FALSE(store_key_is_write_once("ruccl/tcp/addr/x"));
  CHECK_FALSE(store_key_is_write_once("ruccl/tcp/shm/0-1/created"));
  CHECK_FALSE(store_key_is_write_once("addr"));

  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  TcpStoreServer server("127.0.0.1", 0, session, secret);
  TcpStore rank0(server.endpoint(), session, Deadline::after(5s), 300s, secret, 0);
  TcpStore rank1(server.endpoint(), session, Deadline::after(5s), 300s, secret, 1);
  rank0.set("ruccl/tcp/addr/0", "127.0.0.1:4000");
  rank0.set("ruccl/tcp/addr/0", "127.0.0.1:4000");  // the same again: harmless
  const CollectiveError e = error_of([&] { rank1.set("ruccl/tcp/addr/0", "127.0.0.1:6666"); });
  CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
  CHECK(contains(e.what(), "store key \"ruccl/tcp/addr/0\" is written once per attempt"));
  CHECK(contains(e.what(), "first set by 127.0.0.1:"));
  CHECK(contains(e.what(), "(rank 0), a second write refused from 127.0.0.1:"));
  CHECK(contains(e.what(), "(rank 1)"));
  CHECK(rank1.get_string("ruccl/tcp/addr/0", Deadline::after(5s)) == "127.0.0.1:4000");
  rank1.set("other", "a");
  rank1.set("other", "b");  // any other key may change
  CHECK(rank0.get_string("other", Deadline::after(5s)) == "b");
}

TEST_CASE("a store connection that never authenticates is closed after the handshake deadline",
          "[collective][store][security][slow]") {
  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  TcpStoreServer server("127.0.0.1", 0, session, secret);
  net::Socket silent = net::connect_tcp(server.endpoint(), Deadline::after(5s));
  const auto start = Clock::now();
  std::uint8_t byte = 0;
  const CollectiveError e =
      error_of([&] { net::read_exact(silent, &byte, 1, Deadline::after(10s)); });
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  CHECK(Clock::now() - start < 7s);
  CHECK(server.refused_connections() == 1);
  CHECK(contains(net::last_auth_refusal(), "no authentication within 5 s"));
}
