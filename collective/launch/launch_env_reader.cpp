#include "collective/launch/launch_env_reader.h"

#include "collective/common/collective_error.h"

namespace ruccl::launch_detail {

LaunchEnvReader::LaunchEnvReader(const EnvLookup& env, std::string_view label)
    : EnvReader(env, str("read_launch_env (", label, "): ")) {}

std::string LaunchEnvReader::checked_address(std::string_view name,
                                             const std::string& value) const {
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

std::optional<std::string> LaunchEnvReader::master_addr(const char* fallback_name) const {
  const char* name = has("RUCCL_MASTER_ADDR") ? "RUCCL_MASTER_ADDR" : fallback_name;
  if (name == nullptr) return std::nullopt;
  const std::optional<std::string> value = get(name);
  if (!value) return std::nullopt;
  return checked_address(name, *value);
}

std::optional<std::uint16_t> LaunchEnvReader::master_port() const {
  const char* name = first_set({"RUCCL_MASTER_PORT", "MASTER_PORT"});
  if (name == nullptr) return std::nullopt;
  return static_cast<std::uint16_t>(*optional_integer(name, 1, 65535));
}

}  // namespace ruccl::launch_detail
