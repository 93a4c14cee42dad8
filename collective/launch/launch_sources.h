#pragma once
// The readers of each set of launch variables, and what they share. Internal to
// collective/launch/ (read_launch_env picks the reader).
#include <string>

#include "collective/launch/launch_env.h"
#include "collective/launch/launch_env_reader.h"

namespace ruccl::launch_detail {

LaunchEnv read_ruccl_run(const LaunchEnvReader& env);
LaunchEnv read_torchrun(const LaunchEnvReader& env);
LaunchEnv read_openmpi(const LaunchEnvReader& env);
LaunchEnv read_slurm(const LaunchEnvReader& env);  // slurm_env.cpp

/// Completes `job` after a reader set the ranks: the rendezvous address when the reader left it
/// empty (RUCCL_MASTER_ADDR, MASTER_ADDR, else 127.0.0.1 for a one-node job), the port when it left
/// it 0 (RUCCL_MASTER_PORT, MASTER_PORT), RUCCL_SESSION_ID, the session seed
/// "<source>[:<job_id>]@<addr>:<port>", and the restart count (RUCCL_RESTART_COUNT, else
/// `restart_fallback` when not null).
void finish_common(const LaunchEnvReader& env, LaunchEnv& job, const char* restart_fallback,
                   const std::string& job_id);

}  // namespace ruccl::launch_detail
