#include "collective/transport/tcp/tcp_options.h"

namespace ruccl {

Integrity integrity_from_env(bool has_secret, Integrity unset, const EnvLookup& lookup) {
  const EnvReader env(lookup);
  const Integrity integrity =
      env.choice("RUCCL_INTEGRITY", {{"off", Integrity::Off}, {"mac", Integrity::Mac}}, unset);
  if (integrity == Integrity::Mac && !has_secret) {
    env.fail_value("RUCCL_INTEGRITY",
                   "off, or mac together with RUCCL_JOB_SECRET (the frame MACs are keyed by the "
                   "job secret; ruccl-run makes one)",
                   std::optional<std::string>("mac"));
  }
  return integrity;
}

}  // namespace ruccl
