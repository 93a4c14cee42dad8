#pragma once
// How an example decides between its two ways of running: when a launcher (ruccl-run, torchrun,
// srun, mpirun) describes a job in the environment, this process is one rank of it and talks to
// the others over TCP (Communicator::from_env); otherwise the example runs every rank as a thread
// of this process (InProcessGroup).
#include "collective/launch/launch_env.h"

namespace ruccl::examples {

/// True when `env` holds a variable read_launch_env() picks a source by: RUCCL_RANK or
/// RUCCL_WORLD_SIZE (ruccl-run), RANK or WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK or
/// OMPI_COMM_WORLD_SIZE (mpirun), SLURM_PROCID (srun). The job's variables are then checked by
/// read_launch_env, which names any that is missing or wrong.
inline bool environment_describes_job(const EnvLookup& env = process_env()) {
  for (const char* name : {"RUCCL_RANK", "RUCCL_WORLD_SIZE", "RANK", "WORLD_SIZE",
                           "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID"}) {
    if (env(name).has_value()) return true;
  }
  return false;
}

}  // namespace ruccl::examples
