#include "collective/common/session_id.h"

#include "collective/common/collective_error.h"
#include "collective/common/env.h"
#include "collective/common/hash.h"
#include "collective/common/job_secret.h"

namespace ruccl {

SessionId random_session_id() {
  SessionId id{};
  fill_random(id, "random_session_id");
  return id;
}

std::string session_id_to_hex(const SessionId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * id.size());
  for (const std::uint8_t b : id) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

SessionId parse_session_id(std::string_view hex, std::string_view what) {
  SessionId id{};
  bool ok = hex.size() == 2 * id.size();
  bool all_zero = true;
  for (std::size_t i = 0; ok && i < hex.size(); ++i) {
    const char c = hex[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0)
      ok = false;
    else
      id[i / 2] = static_cast<std::uint8_t>(id[i / 2] << 4 | digit);
    all_zero = all_zero && digit == 0;
  }
  if (!ok || all_zero) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str(what,
                              ": expected 32 hex digits, not all zero (a session id; "
                              "`ruccl-run --new-session-id` prints a fresh one), got ",
                              quote_env_value(hex)));
  }
  return id;
}

SessionId session_id_from_seed(std::string_view seed) {
  // Bytes 0-7: mix64(fnv1a64(seed)); bytes 8-15: mix64(fnv1a64(seed, the basis with its 32-bit
  // halves swapped) ^ the seed's length); each little-endian. The second hash starts elsewhere, so
  // the halves are not one function of the other. Never change it: ranks of different builds
  // must agree (tests/collective/common/session_id_test.cpp pins two values).
  const std::uint64_t halves[2] = {mix64(fnv1a64(seed)),
                                   mix64(fnv1a64(seed, 0x84222325cbf29ce4ULL) ^ seed.size())};
  SessionId id{};
  for (std::size_t i = 0; i < id.size(); ++i) {
    id[i] = static_cast<std::uint8_t>(halves[i / 8] >> (8 * (i % 8)));
  }
  return id;
}

}  // namespace ruccl
