#include "collective/net/peer_auth.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "collective/common/collective_error.h"

namespace ruccl::net {

namespace {

constexpr std::string_view kDialerLabel = "ruccl auth v1 dialer";
constexpr std::string_view kAcceptorLabel = "ruccl auth v1 acceptor";
constexpr std::string_view kFrameKeyLabel = "ruccl frame key v1";

void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::atomic<std::uint64_t> refusals{0};
std::atomic<std::uint64_t> refusals_logged{0};
std::mutex last_refusal_mutex;
std::string& last_refusal() {
  static std::string text;
  return text;
}

std::string rank_text(std::int32_t rank) { return rank < 0 ? std::string("none") : str(rank); }

/// Reads one message of `type` by `deadline`; "" or what was wrong.
std::string read_message(const Socket& socket, AuthMessageType type, const Deadline& deadline,
                         AuthMessage& message) {
  std::array<std::uint8_t, kAuthMessageBytes> bytes{};
  read_exact(socket, bytes.data(), bytes.size(), deadline);
  if (std::string why = decode_auth_message(bytes, message); !why.empty()) return why;
  if (message.type != type) {
    return str("an authentication message of type ", static_cast<int>(message.type), " (expected ",
               static_cast<int>(type), ")");
  }
  return "";
}

void write_message(const Socket& socket, const AuthMessage& message, const Deadline& deadline) {
  const auto bytes = encode_auth_message(message);
  write_all(socket, bytes.data(), bytes.size(), deadline);
}

}  // namespace

namespace {

/// HMAC-SHA256(K, label | [direction] | purpose | from | to | session | Nd | Na).
Mac bound_mac(const JobSecret& secret, std::string_view label,
              std::span<const std::uint8_t> direction, const AuthBinding& b,
              std::span<const std::uint8_t, 32> dialer_nonce,
              std::span<const std::uint8_t, 32> acceptor_nonce) {
  std::uint8_t fields[9];
  fields[0] = static_cast<std::uint8_t>(b.purpose);
  put_u32(fields + 1, static_cast<std::uint32_t>(b.from_rank));
  put_u32(fields + 5, static_cast<std::uint32_t>(b.to_rank));
  return hmac_sha256(secret.bytes,
                     {std::span(reinterpret_cast<const std::uint8_t*>(label.data()), label.size()),
                      direction, fields, b.session, dialer_nonce, acceptor_nonce});
}

}  // namespace

Mac auth_mac(const JobSecret& secret, bool acceptor, const AuthBinding& b,
             std::span<const std::uint8_t, 32> dialer_nonce,
             std::span<const std::uint8_t, 32> acceptor_nonce) {
  return bound_mac(secret, acceptor ? kAcceptorLabel : kDialerLabel, {}, b, dialer_nonce,
                   acceptor_nonce);
}

FrameKeys frame_keys(const JobSecret& secret, const AuthBinding& binding,
                     const AuthNonces& nonces) {
  FrameKeys keys;
  const std::uint8_t to_acceptor[1] = {0};
  const std::uint8_t to_dialer[1] = {1};
  const Mac a =
      bound_mac(secret, kFrameKeyLabel, to_acceptor, binding, nonces.dialer, nonces.acceptor);
  const Mac d =
      bound_mac(secret, kFrameKeyLabel, to_dialer, binding, nonces.dialer, nonces.acceptor);
  std::copy_n(a.begin(), keys.dialer_to_acceptor.size(), keys.dialer_to_acceptor.begin());
  std::copy_n(d.begin(), keys.acceptor_to_dialer.size(), keys.acceptor_to_dialer.begin());
  return keys;
}

std::array<std::uint8_t, 32> auth_nonce() {
  std::array<std::uint8_t, 32> nonce{};
  fill_random(nonce, "auth_nonce");
  return nonce;
}

AuthNonces authenticate_dialer(const Socket& socket, const JobSecret& secret,
                               const AuthBinding& binding, const Deadline& deadline) {
  AuthMessage challenge;
  challenge.type = AuthMessageType::Challenge;
  challenge.purpose = binding.purpose;
  challenge.from_rank = binding.from_rank;
  challenge.to_rank = binding.to_rank;
  challenge.nonce = auth_nonce();
  const auto failed = [&](const std::string& why) {
    return CollectiveError(
        CollectiveErrorKind::PeerLost,
        str(socket.peer(), " (", auth_purpose_name(binding.purpose), " connection to rank ",
            rank_text(binding.to_rank), ") failed authentication: ", why));
  };
  AuthMessage response;
  std::string why;
  try {
    write_message(socket, challenge, deadline);
    why = read_message(socket, AuthMessageType::Response, deadline, response);
  } catch (const CollectiveError& e) {
    if (e.kind() != CollectiveErrorKind::PeerLost) throw;
    throw failed(
        str("it closed the connection (it holds another job secret or none, or is not a "
            "ruccl rank of this job): ",
            e.what()));
  }
  if (why.empty() &&
      (response.purpose != binding.purpose || response.from_rank != binding.from_rank ||
       response.to_rank != binding.to_rank)) {
    why = "its answer is bound to another connection";
  }
  if (why.empty()) {
    const Mac expected = auth_mac(secret, true, binding, challenge.nonce, response.nonce);
    if (!job_secrets_equal(expected, response.mac)) why = "wrong MAC (it does not hold the secret)";
  }
  if (!why.empty()) throw failed(why);
  AuthMessage proof = response;
  proof.type = AuthMessageType::Proof;
  proof.nonce = {};
  proof.mac = auth_mac(secret, false, binding, challenge.nonce, response.nonce);
  write_message(socket, proof, deadline);
  return AuthNonces{challenge.nonce, response.nonce};
}

std::string authenticate_acceptor(const Socket& socket, const JobSecret& secret,
                                  std::span<const AuthPurpose> purposes, std::int32_t my_rank,
                                  const SessionId& session, const Deadline& deadline,
                                  AuthBinding& binding, AuthNonces* nonces) {
  try {
    AuthMessage challenge;
    if (std::string why = read_message(socket, AuthMessageType::Challenge, deadline, challenge);
        !why.empty()) {
      return why;
    }
    binding = AuthBinding{challenge.purpose, challenge.from_rank, challenge.to_rank, session};
    if (std::find(purposes.begin(), purposes.end(), challenge.purpose) == purposes.end()) {
      return str("a ", auth_purpose_name(challenge.purpose), " connection, not expected here");
    }
    if (challenge.to_rank != my_rank) {
      return str("it dialled rank ", rank_text(challenge.to_rank), " (this is rank ",
                 rank_text(my_rank), ")");
    }
    AuthMessage response = challenge;
    response.type = AuthMessageType::Response;
    response.nonce = auth_nonce();
    response.mac = auth_mac(secret, true, binding, challenge.nonce, response.nonce);
    write_message(socket, response, deadline);
    AuthMessage proof;
    if (std::string why = read_message(socket, AuthMessageType::Proof, deadline, proof);
        !why.empty()) {
      return why;
    }
    const Mac expected = auth_mac(secret, false, binding, challenge.nonce, response.nonce);
    if (!job_secrets_equal(expected, proof.mac)) return "wrong MAC (it does not hold the secret)";
    if (nonces != nullptr) *nonces = AuthNonces{challenge.nonce, response.nonce};
    return "";
  } catch (const CollectiveError& e) {
    return e.what();  // closed, reset or silent past the deadline
  }
}

std::uint64_t auth_refusals() { return refusals.load(std::memory_order_relaxed); }

std::string last_auth_refusal() {
  std::lock_guard lock(last_refusal_mutex);
  return last_refusal();
}

std::string auth_refusals_summary() {
  const std::uint64_t n = auth_refusals();
  if (n == 0) return "";
  return str(n, " connection(s) refused by this process (failed authentication or over a limit)",
             ", the last: ", last_auth_refusal());
}

std::uint64_t take_unlogged_auth_refusals() {
  const std::uint64_t n = auth_refusals();
  const std::uint64_t before = refusals_logged.exchange(n, std::memory_order_relaxed);
  return n > before ? n - before : 0;
}

void count_auth_refusal(const std::string& what) {
  {
    std::lock_guard lock(last_refusal_mutex);
    last_refusal() = what;
  }
  refusals.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ruccl::net
