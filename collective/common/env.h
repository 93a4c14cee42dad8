#pragma once
// EnvReader: the one typed reader of environment variables in collective/ (and ruccl-run). Every
// bad value is CollectiveError(InvalidConfig) naming the variable, what was expected and what came:
//
//   <context>NAME: expected WHAT, got "VALUE"          (the value escaped and cut: quote_env_value)
//   <context>NAME: expected WHAT, got nothing (not set)
//
// `context` is empty for a library setting ("RUCCL_TCP_SPIN_US: expected a positive number of
// microseconds, got "fast"") and names the reader otherwise ("read_launch_env (torchrun's
// variables): "). Integers are decimal digits only: no sign, no spaces, no "0x", no junk.
//
//   const EnvReader env;  // the process environment; tests pass a lookup over a map
//   if (auto ms = env.milliseconds("RUCCL_CONNECT_TIMEOUT_MS")) timeout = *ms;
//   options.shared_memory = env.choice(
//       "RUCCL_TCP_SHARED_MEMORY", {{"auto", SharedMemory::Auto}, {"off", SharedMemory::Off}},
//       options.shared_memory);  // the value when the variable is not set
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ruccl {

/// Looks up one environment variable: its value, or nothing when it is not set. Tests pass a map.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

/// The process environment (std::getenv; like getenv, not safe against a concurrent setenv).
EnvLookup process_env();

/// `value` between two `quote` characters, for a message: the quote and '\' escaped with '\',
/// other control characters as \xNN, cut after 200 characters with " (N characters, cut)"
/// appended (an environment value can be megabytes long).
std::string quote_env_value(std::string_view value, char quote = '"');

/// Parses decimal digits only (no sign, no spaces, no trailing junk) into [0, 10^18); nothing when
/// the text is anything else or longer.
std::optional<std::uint64_t> parse_decimal(std::string_view text);

/// Whether a choice's spellings match in any case ("info" for "INFO").
enum class EnvCase : unsigned char { Exact, Any };

/// Typed reads of one set of variables (see the file comment). Holds its lookup by value.
class EnvReader {
 public:
  /// The largest number positive() and non_negative() accept by default.
  static constexpr std::int64_t kNoMost = std::numeric_limits<std::int64_t>::max();

  /// Reads through `env`. `context` starts every message ("" or "read_launch_env (...): ").
  /// `quote` surrounds the values in messages: '"', or '\'' where messages have always used it
  /// (RUCCL_DEBUG's).
  explicit EnvReader(EnvLookup env = process_env(), std::string context = {}, char quote = '"')
      : env_(std::move(env)), context_(std::move(context)), quote_(quote) {}

  /// What starts every message of this reader.
  const std::string& context() const { return context_; }

  /// The value of `name`, or nothing when it is not set (an empty value is a value).
  std::optional<std::string> get(const char* name) const { return env_(name); }
  bool has(const char* name) const { return get(name).has_value(); }
  /// The value of `name`, or nothing when it is not set or empty (empty means unset).
  std::optional<std::string> text(const char* name) const;
  /// The first of `names` that is set (nullptr when none is).
  const char* first_set(std::initializer_list<const char*> names) const;

  /// Throws InvalidConfig "<context>NAME: expected EXPECTED, got "VALUE"" about `name`'s value
  /// ("got nothing (not set)" when it is not set).
  [[noreturn]] void fail(std::string_view name, std::string_view expected) const;
  /// The same about a variable whose value is `got`.
  [[noreturn]] void fail_value(std::string_view name, std::string_view expected,
                               const std::optional<std::string>& got) const;

  /// The integer in [lo, hi] that `name` holds; `range` says it in the message ("an integer in
  /// [0, RANK_LIMIT=4)"), default "an integer in [lo, hi]". Not set, or anything else: fail.
  int integer(const char* name, std::int64_t lo, std::int64_t hi, std::string range = {}) const;
  /// The same, or nothing when `name` is not set.
  std::optional<int> optional_integer(const char* name, std::int64_t lo, std::int64_t hi,
                                      std::string range = {}) const;
  /// A rank in [0, limit), where "limit_name=limit" names the bound in the message.
  int index(const char* name, int limit, std::string_view limit_name) const;

  /// A number of `unit` ("bytes", "microseconds") of at least 1 and at most `most`, or nothing
  /// when `name` is not set. "expected a positive number of UNIT, got "VALUE"", and over `most`
  /// "expected at most MOST UNIT, got N".
  std::optional<std::int64_t> positive(const char* name, std::string_view unit,
                                       std::int64_t most = kNoMost) const;
  /// The same with 0 allowed: "expected a non-negative number of UNIT, got "VALUE"".
  std::optional<std::int64_t> non_negative(const char* name, std::string_view unit,
                                           std::int64_t most = kNoMost) const;
  /// positive(name, "milliseconds") as a duration.
  std::optional<std::chrono::milliseconds> milliseconds(const char* name) const;

  /// The value of the spelling `name` holds among `choices` (spelling, value), or `unset` when
  /// `name` is not set. Anything else: "expected a, b or c, got "VALUE"" (" (any case)" added
  /// with EnvCase::Any).
  template <typename E>
  E choice(const char* name, std::initializer_list<std::pair<std::string_view, E>> choices, E unset,
           EnvCase match = EnvCase::Exact) const {
    const std::optional<std::string> value = get(name);
    if (!value) return unset;
    std::string expected;
    std::size_t i = 0;
    for (const auto& [spelling, result] : choices) {
      if (spells(*value, spelling, match)) return result;
      expected += i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", ");
      expected += spelling;
      ++i;
    }
    fail_value(name, match == EnvCase::Any ? expected + " (any case)" : expected, value);
  }

 private:
  static bool spells(std::string_view value, std::string_view spelling, EnvCase match);
  std::optional<std::int64_t> number(const char* name, std::string_view unit, std::int64_t least,
                                     std::int64_t most) const;

  EnvLookup env_;
  std::string context_;
  char quote_;
};

}  // namespace ruccl
