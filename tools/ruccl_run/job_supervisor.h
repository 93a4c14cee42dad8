#pragma once
// Runs one node's ranks of a job: spawns them, relays their output, forwards signals, ends the
// others when one fails and restarts the job up to --max-restarts times.
#include "tools/ruccl_run/launcher_options.h"

namespace ruccl::run {

/// Runs the job and returns ruccl-run's exit status: 0 when every rank exited 0; the failed rank's
/// exit code, or 128 + its signal; 127 (126) when PROGRAM cannot be found (run). When the launcher
/// itself gets SIGINT, SIGTERM or SIGHUP it forwards it, waits for the ranks and dies of it.
/// `master_port` must be resolved (non-zero) by the caller.
int run_job(const LauncherOptions& options);

}  // namespace ruccl::run
