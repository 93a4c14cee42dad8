#pragma once
// LaunchEnvReader: the common EnvReader (collective/common/env.h) with the reads every launcher's
// variables share: the rendezvous address and port. Its messages start "read_launch_env (<label>):
// ". Internal to collective/launch/.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collective/common/env.h"

namespace ruccl::launch_detail {

class LaunchEnvReader : public EnvReader {
 public:
  /// `label` names the source in messages: "ruccl-run's variables".
  LaunchEnvReader(const EnvLookup& env, std::string_view label);

  /// A host name or address: RUCCL_MASTER_ADDR if set, else `fallback_name` if set (nullptr: no
  /// fallback). Nothing when neither is set. Surrounding [] of an IPv6 address are removed.
  std::optional<std::string> master_addr(const char* fallback_name) const;
  /// Checks a host name or address from `name` and returns it without surrounding [].
  std::string checked_address(std::string_view name, const std::string& value) const;
  /// A port in [1, 65535] from RUCCL_MASTER_PORT, else MASTER_PORT; nothing when neither is set.
  std::optional<std::uint16_t> master_port() const;
};

}  // namespace ruccl::launch_detail
