#pragma once
// Peer authentication: the challenge-response that opens every store and mesh connection of a job
// with a secret (common/job_secret.h; docs/security.md), before any other byte is sent or trusted.
// Both sides prove they hold the secret, over fresh nonces of both, bound to the connection's
// purpose, the two ranks and the session, so a recorded exchange replays nowhere and a proof for
// one rank or purpose serves no other. The secret itself never crosses the wire.
//
//   dialer (connects)                              acceptor (listens)
//   Challenge: purpose, from, to, Nd      ->
//                                          <-      Response: Na, HMAC(K, "acceptor" | binding)
//   (checks the acceptor's MAC)
//   Proof: HMAC(K, "dialer" | binding)    ->       (checks the dialer's MAC)
//
// binding = purpose | from rank | to rank | session id | Nd | Na; the messages' bytes are in
// peer_auth_codec.h.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "collective/common/deadline.h"
#include "collective/common/job_secret.h"
#include "collective/net/peer_auth_codec.h"
#include "collective/net/socket.h"

namespace ruccl::net {

/// Where both sides of one connection agree: purpose, ranks, session.
struct AuthBinding {
  AuthPurpose purpose = AuthPurpose::Store;
  std::int32_t from_rank = -1;  ///< the dialer's
  std::int32_t to_rank = -1;    ///< the acceptor's
  SessionId session{};
};

/// The MAC one side sends: `acceptor` says which side, so one side's proof is never the other's.
Mac auth_mac(const JobSecret& secret, bool acceptor, const AuthBinding& binding,
             std::span<const std::uint8_t, 32> dialer_nonce,
             std::span<const std::uint8_t, 32> acceptor_nonce);

/// Both nonces of one authenticated connection: what makes its frame keys (frame_keys) fresh.
struct AuthNonces {
  std::array<std::uint8_t, 32> dialer{};
  std::array<std::uint8_t, 32> acceptor{};
};

/// The two keys of a connection's frame MACs (RUCCL_INTEGRITY=mac; transport/tcp/frame_mac.h),
/// one per direction, so that a frame of one direction can never pass for one of the other:
/// HMAC-SHA256(K, "ruccl frame key v1" | direction | binding | Nd | Na), its first 16 bytes (an
/// AES-128 key). Fresh per connection: neither side alone picks both nonces.
struct FrameKeys {
  std::array<std::uint8_t, 16> dialer_to_acceptor{};
  std::array<std::uint8_t, 16> acceptor_to_dialer{};
};
FrameKeys frame_keys(const JobSecret& secret, const AuthBinding& binding, const AuthNonces& nonces);

/// 32 fresh random bytes (fill_random: the kernel's CSPRNG).
std::array<std::uint8_t, 32> auth_nonce();

/// The dialer's side over a blocking `socket`: Challenge, check the Response, Proof, by
/// `deadline`. Throws CollectiveError(PeerLost) "... failed authentication: <why>" when the
/// acceptor's answer is wrong (or it closes: it does not hold the secret, or refused ours),
/// Timeout when it says nothing in time.
/// Returns both nonces (frame_keys).
AuthNonces authenticate_dialer(const Socket& socket, const JobSecret& secret,
                               const AuthBinding& binding, const Deadline& deadline);

/// The acceptor's side: reads the Challenge (its purpose one of `purposes`, its to-rank
/// `my_rank`), answers, checks the Proof, by `deadline`. Returns "" and sets `binding` (with the
/// dialer's claimed rank), or why the dialer failed (the caller closes the connection, counts it
/// with count_auth_refusal and goes on). Never throws for what the peer sent. On success `nonces`
/// (when given) holds both nonces.
std::string authenticate_acceptor(const Socket& socket, const JobSecret& secret,
                                  std::span<const AuthPurpose> purposes, std::int32_t my_rank,
                                  const SessionId& session, const Deadline& deadline,
                                  AuthBinding& binding, AuthNonces* nonces = nullptr);

/// Connections this process refused for failing authentication (every listener together), and
/// the last one's description ("127.0.0.1:40112 claiming rank 1: wrong MAC").
std::uint64_t auth_refusals();
std::string last_auth_refusal();
/// "3 connection(s) refused by this process (failed authentication or over a limit), the last:
/// <what>", or "" when none: the clause the hang report of a TCP group ends with.
std::string auth_refusals_summary();
/// How many refusals no RUCCL_DEBUG log has shown yet, taking them (each is logged once per
/// process, by the first communicator whose log looks: trace/call_observer.h).
std::uint64_t take_unlogged_auth_refusals();
/// Counts one refusal; `what` describes it (address, claimed rank, why; never the secret). With
/// RUCCL_DEBUG on, it is also a line of the debug log ("refused a connection: <what>"), and the
/// hang report lists the count and the last one.
void count_auth_refusal(const std::string& what);

}  // namespace ruccl::net
