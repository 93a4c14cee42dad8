#pragma once
// RUCCL_DEBUG and RUCCL_DEBUG_FILE: what a communicator logs, and where (docs/observability.md).
//
//   RUCCL_DEBUG=WARN    the error that finishes a group (a hang report, a lost peer), once per rank
//   RUCCL_DEBUG=INFO    also the group's set-up, once per communicator
//   RUCCL_DEBUG=TRACE   also one line per collective
//   RUCCL_DEBUG_FILE=/tmp/ruccl.%h.%r.log   one file per rank (%r rank, %h host, %p pid, %% a '%')
//   RUCCL_TRACE_FILE=trace.%r.json         record every call and write a Chrome trace per rank
//
// Unset or empty variables mean off (logs go to stderr). Any other value is a clear error: the
// group factory that reads them throws CollectiveError(InvalidConfig) "RUCCL_DEBUG: expected ...,
// got '...'", so a typo never silently turns the logging off.
#include <cstdint>
#include <string>
#include <string_view>

namespace ruccl {

/// How much a communicator logs: each level includes the ones before it.
enum class DebugLevel : unsigned char { Off, Warn, Info, Trace };

/// "OFF", "WARN", "INFO", "TRACE".
const char* debug_level_name(DebugLevel level);

/// What the environment asks a communicator to log and record.
struct DebugSettings {
  DebugLevel level = DebugLevel::Off;
  /// RUCCL_DEBUG_FILE: where the log lines go (a pattern: expand_rank_pattern); empty: stderr.
  std::string log_file;
  /// RUCCL_TRACE_FILE: when set, every call is recorded and the communicator writes its Chrome
  /// trace there (a pattern) when it is destroyed.
  std::string trace_file;
};

/// Parses the three variables' values (nullptr or "" = unset). `level`: WARN, INFO, TRACE or
/// OFF in any case. The patterns are checked (expand_rank_pattern's rules). Throws
/// CollectiveError(InvalidConfig) naming the variable, what it expects and what it got.
DebugSettings parse_debug_settings(const char* level, const char* log_file, const char* trace_file);
/// parse_debug_settings of RUCCL_DEBUG, RUCCL_DEBUG_FILE and RUCCL_TRACE_FILE.
DebugSettings debug_settings_from_env();

/// `pattern` with %r replaced by `rank`, %h by `host`, %p by `pid` and %% by '%'. Throws
/// CollectiveError(InvalidConfig) "<variable>: expected %r, %h, %p or %% after '%', got '%x' in
/// '<pattern>'" for any other '%' sequence (a '%' at the end included).
std::string expand_rank_pattern(std::string_view pattern, int rank, std::string_view host,
                                std::int64_t pid, std::string_view variable);

/// This machine's host name ("unknown-host" when gethostname fails).
std::string local_host_name();

}  // namespace ruccl
