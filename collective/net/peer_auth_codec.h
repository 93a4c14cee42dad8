#pragma once
// The bytes of peer authentication (peer_auth.h): one fixed-size message, written once here and
// fuzzed (fuzz/peer_auth_fuzzer.cpp). The decoder takes bytes from anyone who connects: it checks
// every field, never crashes and says what was wrong.
//
// Every message is kAuthMessageBytes (little-endian):
//
//   offset  size  field
//   0       4     magic "RCAU"
//   4       2     version (1)
//   6       1     type (AuthMessageType)
//   7       1     purpose (AuthPurpose)
//   8       4     from rank (i32; the dialer's claimed rank, -1: none, as a store client's)
//   12      4     to rank (i32; the rank dialled, -1: none)
//   16      32    nonce (Challenge: the dialer's; Response: the acceptor's; Proof: zero)
//   48      32    MAC (Challenge: zero)
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ruccl::net {

inline constexpr std::array<std::uint8_t, 4> kAuthMagic = {'R', 'C', 'A', 'U'};
inline constexpr std::uint16_t kAuthVersion = 1;
inline constexpr std::size_t kAuthMessageBytes = 80;

enum class AuthMessageType : std::uint8_t { Challenge = 1, Response = 2, Proof = 3 };

/// What a connection is for: a proof for one purpose is worth nothing for another.
enum class AuthPurpose : std::uint8_t { Store = 1, MeshControl = 2, MeshData = 3 };
/// "store", "control", "data" ("?" outside the enum).
const char* auth_purpose_name(AuthPurpose purpose);

struct AuthMessage {
  AuthMessageType type = AuthMessageType::Challenge;
  AuthPurpose purpose = AuthPurpose::Store;
  std::int32_t from_rank = -1;
  std::int32_t to_rank = -1;
  std::array<std::uint8_t, 32> nonce{};
  std::array<std::uint8_t, 32> mac{};
};

/// The kAuthMessageBytes of `message`.
std::array<std::uint8_t, kAuthMessageBytes> encode_auth_message(const AuthMessage& message);
/// Decodes kAuthMessageBytes (exactly). "" and fills `message`, or what is wrong: bad magic,
/// another version, an unknown type or purpose, a rank below -1.
std::string decode_auth_message(std::span<const std::uint8_t> bytes, AuthMessage& message);

}  // namespace ruccl::net
