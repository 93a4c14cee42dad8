#include "collective/common/env.h"

#include <cstdlib>

#include "collective/common/collective_error.h"

namespace ruccl {

EnvLookup process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string quote_env_value(std::string_view value, char quote) {
  constexpr std::size_t kShown = 200;
  std::string out(1, quote);
  for (std::size_t i = 0; i < value.size() && i < kShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  if (value.size() > kShown) out += str(" (", value.size(), " characters, cut)");
  return out;
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;  // 18 digits < 2^63: no overflow
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::optional<std::string> EnvReader::text(const char* name) const {
  std::optional<std::string> value = get(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

const char* EnvReader::first_set(std::initializer_list<const char*> names) const {
  for (const char* name : names) {
    if (has(name)) return name;
  }
  return nullptr;
}

void EnvReader::fail(std::string_view name, std::string_view expected) const {
  fail_value(name, expected, get(std::string(name).c_str()));
}

void EnvReader::fail_value(std::string_view name, std::string_view expected,
                           const std::optional<std::string>& got) const {
  throw CollectiveError(
      CollectiveErrorKind::InvalidConfig,
      str(context_, name, ": expected ", expected, ", got ",
          got ? quote_env_value(*got, quote_) : std::string("nothing (not set)")));
}

std::optional<int> EnvReader::optional_integer(const char* name, std::int64_t lo, std::int64_t hi,
                                               std::string range) const {
  const std::optional<std::string> value = get(name);
  if (!value) return std::nullopt;
  if (range.empty()) range = str("an integer in [", lo, ", ", hi, "]");
  const std::optional<std::uint64_t> parsed = parse_decimal(*value);
  if (!parsed || *parsed > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ||
      static_cast<std::int64_t>(*parsed) < lo || static_cast<std::int64_t>(*parsed) > hi) {
    fail_value(name, range, value);
  }
  return static_cast<int>(*parsed);
}

int EnvReader::integer(const char* name, std::int64_t lo, std::int64_t hi,
                       std::string range) const {
  if (range.empty()) range = str("an integer in [", lo, ", ", hi, "]");
  if (!has(name)) fail_value(name, range, std::nullopt);
  return *optional_integer(name, lo, hi, range);
}

int EnvReader::index(const char* name, int limit, std::string_view limit_name) const {
  return integer(name, 0, limit - 1, str("an integer in [0, ", limit_name, "=", limit, ")"));
}

std::optional<std::int64_t> EnvReader::number(const char* name, std::string_view unit,
                                              std::int64_t least, std::int64_t most) const {
  const std::optional<std::string> value = get(name);
  if (!value) return std::nullopt;
  const std::optional<std::uint64_t> parsed = parse_decimal(*value);
  if (!parsed || static_cast<std::int64_t>(*parsed) < least) {
    fail_value(name, str("a ", least > 0 ? "positive" : "non-negative", " number of ", unit),
               value);
  }
  const auto n = static_cast<std::int64_t>(*parsed);  // < 10^18: fits
  if (n > most) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str(context_, name, ": expected at most ", most, " ", unit, ", got ", n));
  }
  return n;
}

std::optional<std::int64_t> EnvReader::positive(const char* name, std::string_view unit,
                                                std::int64_t most) const {
  return number(name, unit, 1, most);
}

std::optional<std::int64_t> EnvReader::non_negative(const char* name, std::string_view unit,
                                                    std::int64_t most) const {
  return number(name, unit, 0, most);
}

std::optional<std::chrono::milliseconds> EnvReader::milliseconds(const char* name) const {
  const std::optional<std::int64_t> ms = positive(name, "milliseconds");
  if (!ms) return std::nullopt;
  return std::chrono::milliseconds(*ms);
}

bool EnvReader::spells(std::string_view value, std::string_view spelling, EnvCase match) {
  if (value.size() != spelling.size()) return false;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    const bool same =
        match == EnvCase::Any ? lower(value[i]) == lower(spelling[i]) : value[i] == spelling[i];
    if (!same) return false;
  }
  return true;
}

}  // namespace ruccl
