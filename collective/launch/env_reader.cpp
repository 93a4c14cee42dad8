#include "collective/launch/env_reader.h"

#include <limits>

#include "collective/common/collective_error.h"

namespace ruccl::launch_detail {

std::string quoted(std::string_view value) {
  constexpr std::size_t kShown = 200;
  std::string out = "\"";
  for (std::size_t i = 0; i < value.size() && i < kShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == '"' || c == '\\') {
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
  out += '"';
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

const char* EnvReader::first_set(std::initializer_list<const char*> names) const {
  for (const char* name : names) {
    if (has(name)) return name;
  }
  return nullptr;
}

void EnvReader::fail(std::string_view name, std::string_view expected) const {
  fail_value(name, expected, env_(std::string(name).c_str()));
}

void EnvReader::fail_value(std::string_view name, std::string_view expected,
                           const std::optional<std::string>& got) const {
  throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                        str("read_launch_env (", label_, "): ", name, ": expected ", expected,
                            ", got ", got ? quoted(*got) : std::string("nothing (not set)")));
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

std::string EnvReader::checked_address(std::string_view name, const std::string& value) const {
  std::string_view host = value;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // RFC 1035 names are at most 253 characters; IPv6 addresses (with a %scope) are shorter.
  bool ok = !host.empty() && host.size() <= 253;
  for (const char c : host) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == ':' ||
                         c == '%';
    ok = ok && allowed;
  }
  if (!ok) {
    fail_value(name,
               "a host name or IP address (at most 253 characters of letters, digits, "
               "'.', '-', '_', ':', '%'; an IPv6 address may be in [])",
               value);
  }
  return std::string(host);
}

std::optional<std::string> EnvReader::master_addr(const char* fallback_name) const {
  const char* name = has("RUCCL_MASTER_ADDR") ? "RUCCL_MASTER_ADDR" : fallback_name;
  if (name == nullptr) return std::nullopt;
  const std::optional<std::string> value = get(name);
  if (!value) return std::nullopt;
  return checked_address(name, *value);
}

std::optional<std::uint16_t> EnvReader::master_port() const {
  const char* name = first_set({"RUCCL_MASTER_PORT", "MASTER_PORT"});
  if (name == nullptr) return std::nullopt;
  return static_cast<std::uint16_t>(*optional_integer(name, 1, 65535));
}

}  // namespace ruccl::launch_detail
