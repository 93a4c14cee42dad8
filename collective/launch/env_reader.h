#pragma once
// EnvReader: typed reads of launch variables whose errors name the variable, what was expected,
// what came and the set of variables in use. Internal to collective/launch/.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "collective/launch/launch_env.h"

namespace ruccl::launch_detail {

/// `value` in double quotes for a message: control characters escaped, cut after 200 characters
/// (an environment value can be megabytes long).
std::string quoted(std::string_view value);

/// Parses decimal digits only (no sign, no spaces, no trailing junk) into [0, 2^63); nothing when
/// the text is anything else or overflows.
std::optional<std::uint64_t> parse_decimal(std::string_view text);

class EnvReader {
 public:
  /// `label` names the source in messages: "ruccl-run's variables".
  EnvReader(const EnvLookup& env, std::string label) : env_(env), label_(std::move(label)) {}

  const std::string& label() const { return label_; }
  std::optional<std::string> get(const char* name) const { return env_(name); }
  bool has(const char* name) const { return env_(name).has_value(); }
  /// The first of `names` that is set (nullptr when none is).
  const char* first_set(std::initializer_list<const char*> names) const;

  /// Throws InvalidConfig "read_launch_env (<label>): NAME: expected EXPECTED, got "VALUE""
  /// ("got nothing (not set)" when the variable is not set).
  [[noreturn]] void fail(std::string_view name, std::string_view expected) const;
  /// The same about a variable whose value is `got`.
  [[noreturn]] void fail_value(std::string_view name, std::string_view expected,
                               const std::optional<std::string>& got) const;

  /// The integer in [lo, hi] that `name` holds; `range` says it in the message ("an integer in
  /// [0, RANK_LIMIT=4)"), default "an integer in [lo, hi]". Missing or anything else: fail.
  int integer(const char* name, std::int64_t lo, std::int64_t hi, std::string range = {}) const;
  /// The same, or nothing when `name` is not set.
  std::optional<int> optional_integer(const char* name, std::int64_t lo, std::int64_t hi,
                                      std::string range = {}) const;

  /// A rank in [0, limit) where `limit_name=limit` names the bound in the message.
  int index(const char* name, int limit, std::string_view limit_name) const;

  /// A host name or address: RUCCL_MASTER_ADDR if set, else `fallback_name` if set (nullptr: no
  /// fallback). Nothing when neither is set. Surrounding [] of an IPv6 address are removed.
  std::optional<std::string> master_addr(const char* fallback_name) const;
  /// Checks a host name or address from `name` and returns it without surrounding [].
  std::string checked_address(std::string_view name, const std::string& value) const;
  /// A port in [1, 65535] from RUCCL_MASTER_PORT, else MASTER_PORT; nothing when neither is set.
  std::optional<std::uint16_t> master_port() const;

 private:
  const EnvLookup& env_;
  std::string label_;
};

}  // namespace ruccl::launch_detail
