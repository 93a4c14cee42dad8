#pragma once
// JobSecret: the 256-bit secret that proves membership of a job (docs/security.md). The session id
// (session_id.h) names a job; the secret is what an outsider who learnt the name still lacks.
// ruccl-run makes one per job and hands it to the ranks in RUCCL_JOB_SECRET (the environment only:
// /proc/<pid>/environ is readable by the owner alone); with it set, every store and mesh
// connection authenticates both ways (net/peer_auth.h) and the names others can see are derived
// one-way from it (derived_name).
//
// The secret never appears in a message, a log line or a name: every error below says what was
// wrong with the text (its length, the first bad character's position), never the text itself.
//
//   const JobSecret secret = random_job_secret();            // what ruccl-run does per job
//   setenv("RUCCL_JOB_SECRET", job_secret_to_hex(secret));   // hand it to a child only
//   std::optional<JobSecret> mine = job_secret_from_env();   // in a rank
//   hmac_sha256(secret.bytes, {label, message});             // OpenSSL's HMAC
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "collective/common/env.h"
#include "collective/common/session_id.h"

namespace ruccl {

/// 32 random bytes; compare with job_secrets_equal (constant time), never print.
struct JobSecret {
  std::array<std::uint8_t, 32> bytes{};
};

/// An HMAC-SHA256 value.
using Mac = std::array<std::uint8_t, 32>;

/// Fills `out` from the kernel's random source (getrandom, the CSPRNG OpenSSL seeds from too:
/// OpenSSL's own RAND_bytes costs 2-10 ms to set up in every process, measured, which a job
/// would pay at start-up). Throws CollectiveError(InvalidConfig) "<who>: getrandom failed: ...".
void fill_random(std::span<std::uint8_t> out, const char* who);

/// 32 random bytes (fill_random).
JobSecret random_job_secret();

/// 64 lower-case hex digits (for the environment of a child, never for a message).
std::string job_secret_to_hex(const JobSecret& secret);

/// Parses exactly 64 hex digits (either case; one trailing newline allowed, as a file written by
/// `openssl rand -hex 32` has); all zeros refused. Throws CollectiveError(InvalidConfig) "<what>:
/// expected 64 hex digits (a 256-bit job secret, e.g. `openssl rand -hex 32`), got N characters"
/// or "..., got a non-hex character at position K": never the text itself.
JobSecret parse_job_secret(std::string_view hex, std::string_view what);

/// Reads a secret file (64 hex digits): refused unless it is a regular file of this user that
/// neither group nor others may read or write (mode 0600 or 0400). Throws InvalidConfig naming
/// the file and its mode ("--secret-file /x/s: expected a file only its owner can read (mode
/// 0600), got mode 0644: run chmod 600 /x/s").
JobSecret read_job_secret_file(const std::string& path, std::string_view what = "--secret-file");

/// RUCCL_JOB_SECRET when set (parsed; InvalidConfig naming the variable when malformed). When it
/// is not set and RUCCL_REQUIRE_SECRET=1: InvalidConfig "RUCCL_REQUIRE_SECRET=1: expected
/// RUCCL_JOB_SECRET (64 hex digits) in the environment, got nothing (...)". Otherwise nothing.
std::optional<JobSecret> job_secret_from_env(const EnvLookup& env = process_env());

/// Whether two secrets (or MACs) are equal, in time independent of where they differ.
bool job_secrets_equal(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b);

/// HMAC-SHA256 of the concatenation of `parts` under `key` (OpenSSL).
Mac hmac_sha256(std::span<const std::uint8_t> key,
                std::initializer_list<std::span<const std::uint8_t>> parts);

/// A name others may see (a socket or /dev/shm name) for `label` ("shm"): 32 hex digits of
/// HMAC-SHA256(key, "ruccl name v1" | label | session), keyed by the secret when there is one,
/// else by the session id. One-way: it reveals neither the secret nor the session id.
std::string derived_name(const std::optional<JobSecret>& secret, const SessionId& session,
                         std::string_view label);

}  // namespace ruccl
