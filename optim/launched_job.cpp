#include "optim/launched_job.h"

#include <algorithm>
#include <cstdlib>

namespace ruccl::optim {

bool environment_describes_job(const EnvLookup& env) {
  for (const char* name : {"RUCCL_RANK", "RUCCL_WORLD_SIZE", "RANK", "WORLD_SIZE",
                           "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID"}) {
    if (env(name).has_value()) return true;
  }
  return false;
}

LaunchEnv mpi_launch_env(const Communicator& comm, const EnvLookup& env) {
  LaunchEnv job;
  job.world_size = comm.world_size();
  job.rank = comm.rank();
  job.source = "MPI";
  // atoi, as the first of these programs did: "2(x3)" reads as 2, anything unparsable as 0.
  const auto first_of = [&](const char* a, const char* b) -> std::optional<int> {
    std::optional<std::string> v = env(a);
    if (!v) v = env(b);
    if (!v) return std::nullopt;
    return std::atoi(v->c_str());
  };
  const auto local = first_of("OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_TASKS_PER_NODE");
  job.local_world_size = local ? std::max(1, *local) : 1;
  const auto local_rank = first_of("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID");
  job.local_rank = local_rank ? std::max(0, *local_rank) : 0;
  return job;
}

}  // namespace ruccl::optim
