// Peer authentication (collective/net/peer_auth.h): the message's bytes, and the challenge-response
// between a dialer and an acceptor: the same secret passes, another secret, purpose or rank does
// not, and a recorded proof replays nowhere.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "collective/net/peer_auth.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace ruccl::net;
using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

/// A connected pair on loopback: (dialer's socket, acceptor's socket).
std::pair<Socket, Socket> connected_pair() {
  Socket listener = listen_tcp("127.0.0.1", 0);
  Socket dialer = connect_tcp(local_endpoint(listener), Deadline::after(5s));
  Socket acceptor = accept_tcp(listener, Deadline::after(5s));
  return {std::move(dialer), std::move(acceptor)};
}

struct Outcome {
  std::string dialer_error;  // "" when the dialer's side passed
  std::string acceptor_why;  // "" when the acceptor's side passed
  AuthBinding proven;
};

Outcome handshake(const JobSecret& dialer_secret, const JobSecret& acceptor_secret,
                  const AuthBinding& claim, AuthPurpose expected = AuthPurpose::MeshData,
                  std::int32_t acceptor_rank = 0) {
  auto [d, a_] = connected_pair();
  net::Socket a = std::move(a_);  // a lambda may not capture a structured binding (clang 14)
  Outcome out;
  std::thread acceptor([&, a = std::move(a)] {
    const AuthPurpose purposes[] = {expected};
    out.acceptor_why = authenticate_acceptor(a, acceptor_secret, purposes, acceptor_rank,
                                             claim.session, Deadline::after(5s), out.proven);
  });
  try {
    authenticate_dialer(d, dialer_secret, claim, Deadline::after(5s));
  } catch (const CollectiveError& e) {
    out.dialer_error = e.what();
  }
  d = Socket();  // closed: an acceptor still waiting for the proof sees the close
  acceptor.join();
  return out;
}

}  // namespace

TEST_CASE("an authentication message round-trips and a malformed one says what is wrong",
          "[collective][net][security]") {
  AuthMessage m;
  m.type = AuthMessageType::Response;
  m.purpose = AuthPurpose::MeshControl;
  m.from_rank = 7;
  m.to_rank = -1;
  m.nonce.fill(0xab);
  m.mac.fill(0xcd);
  const auto bytes = encode_auth_message(m);
  AuthMessage back;
  REQUIRE(decode_auth_message(bytes, back).empty());
  CHECK(back.type == m.type);
  CHECK(back.purpose == m.purpose);
  CHECK(back.from_rank == 7);
  CHECK(back.to_rank == -1);
  CHECK(back.nonce == m.nonce);
  CHECK(back.mac == m.mac);

  const auto broken = [&](std::size_t at, std::uint8_t value) {
    auto b = bytes;
    b[at] = value;
    return decode_auth_message(b, back);
  };
  CHECK(contains(broken(0, 'X'), "bad magic"));
  CHECK(broken(4, 2) == "authentication version 2 (expected 1)");
  CHECK(broken(6, 9) == "unknown authentication message type 9");
  CHECK(broken(7, 0) == "unknown connection purpose 0");
  CHECK(broken(11, 0x80) == "ranks -2147483641 -> -1 (each -1 or more)");
  CHECK(decode_auth_message(std::span(bytes.data(), 79), back) ==
        "an authentication message of 79 bytes (expected 80)");
}

TEST_CASE("dialer and acceptor with the same secret prove it to each other",
          "[collective][net][security]") {
  const JobSecret secret = random_job_secret();
  const AuthBinding claim{AuthPurpose::MeshData, 3, 0, random_session_id()};
  const Outcome ok = handshake(secret, secret, claim);
  CHECK(ok.dialer_error.empty());
  CHECK(ok.acceptor_why.empty());
  CHECK(ok.proven.from_rank == 3);
  CHECK(ok.proven.purpose == AuthPurpose::MeshData);
}

TEST_CASE("another secret, purpose or rank fails authentication on the side that checks it",
          "[collective][net][security]") {
  const JobSecret secret = random_job_secret();
  const AuthBinding claim{AuthPurpose::MeshData, 3, 0, random_session_id()};
  // The acceptor answers first: a dialer with another secret finds its MAC wrong and says so.
  const Outcome wrong = handshake(random_job_secret(), secret, claim);
  CHECK(contains(wrong.dialer_error, "failed authentication: wrong MAC"));
  CHECK_FALSE(wrong.acceptor_why.empty());  // it never got a proof
  // A dialer for another purpose or rank is refused before the acceptor proves anything.
  const Outcome purpose = handshake(secret, secret, claim, AuthPurpose::Store);
  CHECK(purpose.acceptor_why == "a data connection, not expected here");
  CHECK(contains(purpose.dialer_error, "failed authentication: it closed the connection"));
  const Outcome rank = handshake(secret, secret, claim, AuthPurpose::MeshData, 1);
  CHECK(rank.acceptor_why == "it dialled rank 0 (this is rank 1)");
}

TEST_CASE("a recorded proof is refused on a new connection: the acceptor's nonce is fresh",
          "[collective][net][security]") {
  const JobSecret secret = random_job_secret();
  const AuthBinding claim{AuthPurpose::MeshControl, 1, 0, random_session_id()};
  // An eavesdropper's recording of one whole exchange: the dialer's challenge and its proof.
  AuthMessage challenge;
  challenge.type = AuthMessageType::Challenge;
  challenge.purpose = claim.purpose;
  challenge.from_rank = claim.from_rank;
  challenge.to_rank = claim.to_rank;
  challenge.nonce = auth_nonce();
  AuthMessage response;
  {
    auto [d, a_] = connected_pair();
    net::Socket a = std::move(a_);
    std::thread acceptor([&, a = std::move(a)] {
      AuthBinding proven;
      const AuthPurpose purposes[] = {AuthPurpose::MeshControl};
      CHECK(
          authenticate_acceptor(a, secret, purposes, 0, claim.session, Deadline::after(5s), proven)
              .empty());
    });
    const auto c = encode_auth_message(challenge);
    write_all(d, c.data(), c.size(), Deadline::after(5s));
    std::array<std::uint8_t, kAuthMessageBytes> r{};
    read_exact(d, r.data(), r.size(), Deadline::after(5s));
    REQUIRE(decode_auth_message(r, response).empty());
    AuthMessage proof = response;
    proof.type = AuthMessageType::Proof;
    proof.mac = auth_mac(secret, false, claim, challenge.nonce, response.nonce);
    const auto p = encode_auth_message(proof);
    write_all(d, p.data(), p.size(), Deadline::after(5s));
    acceptor.join();
    // Replayed by someone without the secret on a new connection: the same bytes, twice.
    auto [d2, a2_] = connected_pair();
    net::Socket a2 = std::move(a2_);
    std::string why;
    std::thread replayed([&, a2 = std::move(a2)] {
      AuthBinding proven;
      const AuthPurpose purposes[] = {AuthPurpose::MeshControl};
      why = authenticate_acceptor(a2, secret, purposes, 0, claim.session, Deadline::after(5s),
                                  proven);
    });
    write_all(d2, c.data(), c.size(), Deadline::after(5s));
    read_exact(d2, r.data(), r.size(), Deadline::after(5s));
    AuthMessage fresh;
    REQUIRE(decode_auth_message(r, fresh).empty());
    CHECK(fresh.nonce != response.nonce);
    write_all(d2, p.data(), p.size(), Deadline::after(5s));
    replayed.join();
    CHECK(why == "wrong MAC (it does not hold the secret)");
  }
}
