#include "collective/trace/debug_settings.h"

#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdlib>

#include "collective/common/collective_error.h"

namespace ruccl {

namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Checks a pattern once with placeholder values, so a bad one fails when the group is made.
void check_pattern(const std::string& pattern, std::string_view variable) {
  if (!pattern.empty()) expand_rank_pattern(pattern, 0, "host", 1, variable);
}

}  // namespace

const char* debug_level_name(DebugLevel level) {
  switch (level) {
    case DebugLevel::Off:
      return "OFF";
    case DebugLevel::Warn:
      return "WARN";
    case DebugLevel::Info:
      return "INFO";
    case DebugLevel::Trace:
      return "TRACE";
  }
  return "?";
}

DebugSettings parse_debug_settings(const char* level, const char* log_file,
                                   const char* trace_file) {
  DebugSettings settings;
  const std::string value = upper(level != nullptr ? level : "");
  static constexpr std::array<DebugLevel, 4> kLevels = {DebugLevel::Off, DebugLevel::Warn,
                                                        DebugLevel::Info, DebugLevel::Trace};
  bool known = value.empty();
  for (DebugLevel l : kLevels) {
    if (value == debug_level_name(l)) {
      settings.level = l;
      known = true;
    }
  }
  if (!known) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str("RUCCL_DEBUG: expected WARN, INFO, TRACE or OFF (any case), got '", level, "'"));
  }
  settings.log_file = log_file != nullptr ? log_file : "";
  settings.trace_file = trace_file != nullptr ? trace_file : "";
  check_pattern(settings.log_file, "RUCCL_DEBUG_FILE");
  check_pattern(settings.trace_file, "RUCCL_TRACE_FILE");
  return settings;
}

DebugSettings debug_settings_from_env() {
  return parse_debug_settings(std::getenv("RUCCL_DEBUG"), std::getenv("RUCCL_DEBUG_FILE"),
                              std::getenv("RUCCL_TRACE_FILE"));
}

std::string expand_rank_pattern(std::string_view pattern, int rank, std::string_view host,
                                std::int64_t pid, std::string_view variable) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    switch (next) {
      case 'r':
        out += std::to_string(rank);
        break;
      case 'h':
        out += host;
        break;
      case 'p':
        out += std::to_string(pid);
        break;
      case '%':
        out += '%';
        break;
      default:
        throw CollectiveError(
            CollectiveErrorKind::InvalidConfig,
            str(variable, ": expected %r (rank), %h (host), %p (pid) or %% after '%', got ",
                next == '\0' ? std::string("a '%' at the end") : str("'%", next, "'"), " in '",
                pattern, "'"));
    }
    ++i;
  }
  return out;
}

std::string local_host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "unknown-host";
  return std::string(name.data());
}

}  // namespace ruccl
