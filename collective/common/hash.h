#pragma once
// The one non-cryptographic hash of collective/: 64-bit FNV-1a, and the murmur3 finaliser that
// spreads its bits. For names and ids every rank computes alike (a file name for a long store key,
// a node's host name, a session id derived from a job's seed), never for anything an attacker
// chooses to collide: a session id is compared whole, and a shorter name is only a file name.
//
//   fnv1a64("")  == 0xcbf29ce484222325   (the offset basis)
//   fnv1a64("a") == 0xaf63dc4c8601ec8c
//
// FNV-1a (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/): for each byte,
// h = (h XOR byte) * 0x100000001b3, starting from the offset basis 0xcbf29ce484222325.
#include <cstdint>
#include <string_view>

namespace ruccl {

/// FNV-1a's 64-bit offset basis (the hash of no bytes).
inline constexpr std::uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;
/// FNV-1a's 64-bit prime.
inline constexpr std::uint64_t kFnv1a64Prime = 0x100000001b3ULL;

/// FNV-1a 64 of `bytes`, continuing from `h` (the offset basis by default; another start gives an
/// independent hash of the same bytes, as session_id_from_seed's second half does).
constexpr std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h = kFnv1a64Basis) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv1a64Prime;
  }
  return h;
}

/// murmur3's 64-bit finaliser (fmix64): a bijection of 64 bits in which every input bit flips
/// each output bit with probability about 1/2. A multiply carries a change only upwards, so the
/// low bits of FNV-1a depend little on the last bytes; this spreads every byte over all 64 bits.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

}  // namespace ruccl
