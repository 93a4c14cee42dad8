#include "collective/trace/debug_settings.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <optional>

#include "collective/common/collective_error.h"
#include "collective/common/env.h"

namespace ruccl {

namespace {

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
  // The three values as an environment where empty means unset. These messages have always put
  // the value in single quotes (tests pin them).
  const EnvReader env(
      [&](const char* name) -> std::optional<std::string> {
        const std::string_view which = name;
        const char* value = which == "RUCCL_DEBUG"        ? level
                            : which == "RUCCL_DEBUG_FILE" ? log_file
                            : which == "RUCCL_TRACE_FILE" ? trace_file
                                                          : nullptr;
        if (value == nullptr || *value == '\0') return std::nullopt;
        return std::string(value);
      },
      "", '\'');
  DebugSettings settings;
  settings.level = env.choice("RUCCL_DEBUG",
                              {{"WARN", DebugLevel::Warn},
                               {"INFO", DebugLevel::Info},
                               {"TRACE", DebugLevel::Trace},
                               {"OFF", DebugLevel::Off}},
                              DebugLevel::Off, EnvCase::Any);
  settings.log_file = env.text("RUCCL_DEBUG_FILE").value_or("");
  settings.trace_file = env.text("RUCCL_TRACE_FILE").value_or("");
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
