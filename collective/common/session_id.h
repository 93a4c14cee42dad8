#pragma once
// SessionId: the 128-bit id of one job (one attempt of it). Every rendezvous request, TCP hello and
// frame, shared-memory segment and FileStore folder carries it, so that processes of another job
// (or an earlier attempt) that reach the same address are refused.
//
//   const SessionId id = random_session_id();              // what ruccl-run does per attempt
//   const std::string hex = session_id_to_hex(id);          // 32 lower-case hex digits
//   parse_session_id(hex, "RUCCL_SESSION_ID") == id;        // either case; all zeros refused
//   session_id_from_seed("slurm:1234.0@node01:21234");     // every rank of a job derives the same
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ruccl {

/// A job's session id: 16 bytes, written as 32 hex digits. All zeros means "not set".
using SessionId = std::array<std::uint8_t, 16>;

/// 16 bytes from the kernel's random source (getrandom). Throws CollectiveError(InvalidConfig)
/// "random_session_id: getrandom failed: ..." if it fails.
SessionId random_session_id();

/// 32 lower-case hex digits, first byte first.
std::string session_id_to_hex(const SessionId& id);
/// The same as session_id_to_hex (the launch API's name for it).
inline std::string format_session_id(const SessionId& id) { return session_id_to_hex(id); }

/// Parses exactly 32 hex digits (either case, nothing else) into a session id; all zeros is
/// refused (an unset id, not a random one). Throws CollectiveError(InvalidConfig) "<what>: expected
/// 32 hex digits, not all zero (...), got "<hex>"": `what` names where the text came from (a
/// variable, an option, a file).
SessionId parse_session_id(std::string_view hex, std::string_view what = "parse_session_id");

/// A session id every process of a job derives alike from `seed` (LaunchEnv::session_seed): two
/// independent FNV-1a 64 hashes of the seed, each spread by mix64 (common/hash.h). Not secret:
/// it tells jobs apart, it does not keep anyone out.
SessionId session_id_from_seed(std::string_view seed);

}  // namespace ruccl
