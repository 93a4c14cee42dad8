#include "collective/net/peer_auth_codec.h"

#include <algorithm>

#include "tensor/core/error.h"

namespace ruccl::net {

namespace {

void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}

}  // namespace

const char* auth_purpose_name(AuthPurpose purpose) {
  switch (purpose) {
    case AuthPurpose::Store:
      return "store";
    case AuthPurpose::MeshControl:
      return "control";
    case AuthPurpose::MeshData:
      return "data";
  }
  return "?";
}

std::array<std::uint8_t, kAuthMessageBytes> encode_auth_message(const AuthMessage& m) {
  std::array<std::uint8_t, kAuthMessageBytes> out{};
  std::copy(kAuthMagic.begin(), kAuthMagic.end(), out.begin());
  out[4] = static_cast<std::uint8_t>(kAuthVersion & 0xFF);
  out[5] = static_cast<std::uint8_t>(kAuthVersion >> 8);
  out[6] = static_cast<std::uint8_t>(m.type);
  out[7] = static_cast<std::uint8_t>(m.purpose);
  put_u32(out.data() + 8, static_cast<std::uint32_t>(m.from_rank));
  put_u32(out.data() + 12, static_cast<std::uint32_t>(m.to_rank));
  std::copy(m.nonce.begin(), m.nonce.end(), out.begin() + 16);
  std::copy(m.mac.begin(), m.mac.end(), out.begin() + 48);
  return out;
}

std::string decode_auth_message(std::span<const std::uint8_t> bytes, AuthMessage& m) {
  if (bytes.size() != kAuthMessageBytes) {
    return str("an authentication message of ", bytes.size(), " bytes (expected ",
               kAuthMessageBytes, ")");
  }
  if (!std::equal(kAuthMagic.begin(), kAuthMagic.end(), bytes.begin())) {
    return "not an authentication message (bad magic: the peer holds no job secret, or is not "
           "ruccl)";
  }
  const unsigned version = bytes[4] | (bytes[5] << 8);
  if (version != kAuthVersion) {
    return str("authentication version ", version, " (expected ", kAuthVersion, ")");
  }
  if (bytes[6] < 1 || bytes[6] > 3) return str("unknown authentication message type ", +bytes[6]);
  if (bytes[7] < 1 || bytes[7] > 3) return str("unknown connection purpose ", +bytes[7]);
  m.type = static_cast<AuthMessageType>(bytes[6]);
  m.purpose = static_cast<AuthPurpose>(bytes[7]);
  m.from_rank = static_cast<std::int32_t>(get_u32(bytes.data() + 8));
  m.to_rank = static_cast<std::int32_t>(get_u32(bytes.data() + 12));
  if (m.from_rank < -1 || m.to_rank < -1) {
    return str("ranks ", m.from_rank, " -> ", m.to_rank, " (each -1 or more)");
  }
  std::copy(bytes.begin() + 16, bytes.begin() + 48, m.nonce.begin());
  std::copy(bytes.begin() + 48, bytes.begin() + 80, m.mac.begin());
  return "";
}

}  // namespace ruccl::net
