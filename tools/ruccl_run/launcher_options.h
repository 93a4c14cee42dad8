#pragma once
// ruccl-run's command line: what it parses, the usage text, and the usage error (exit status 2).
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collective/common/job_secret.h"
#include "collective/launch/launch_env.h"

namespace ruccl::run {

/// A bad command line: the message names the argument; ruccl-run prints it with the usage text
/// and exits with status 2.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LauncherOptions {
  int nproc_per_node = 0;  ///< local ranks to start (required)
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;  ///< empty: 127.0.0.1 (only on one node; required on several)
  int master_port = 0;      ///< 0: a free port (one node) or 29500 (several nodes)
  int max_restarts = 0;
  std::optional<SessionId> session_id;  ///< RUCCL_SESSION_ID (never on the command line)
  /// --secret-file F (mode 0600), else the launcher's RUCCL_JOB_SECRET; none: a random one per
  /// attempt (one node only). Handed to the ranks in RUCCL_JOB_SECRET, nowhere else.
  std::optional<JobSecret> secret;
  double grace_period_s = 10.0;      ///< SIGTERM to SIGKILL
  std::vector<std::string> command;  ///< PROGRAM ARGS...
  bool help = false;
  bool new_session_id = false;
};

/// Parses argv[1..]; `env_session_id` and `env_secret` are the launcher's RUCCL_SESSION_ID and
/// RUCCL_JOB_SECRET. Throws UsageError (never quoting a secret).
LauncherOptions parse_launcher_options(int argc, char** argv,
                                       const std::optional<std::string>& env_session_id,
                                       const std::optional<std::string>& env_secret = {});

/// The usage text (ends with a newline).
std::string usage_text();

}  // namespace ruccl::run
