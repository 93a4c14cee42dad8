// Whether a launcher describes a job (collective/launch/launch_env.h), and where a rank of an MPI
// job sits.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "collective/in_process_group.h"
#include "collective/launch/launch_env.h"
#include "collective/run_ranks.h"

using namespace ruccl;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("any launcher's rank or world-size variable describes a job, nothing else does",
          "[collective]") {
  CHECK_FALSE(environment_describes_job(env_of({})));
  CHECK_FALSE(environment_describes_job(env_of({{"MASTER_ADDR", "h"}, {"LOCAL_RANK", "0"}})));
  for (const char* name : {"RUCCL_RANK", "RUCCL_WORLD_SIZE", "RANK", "WORLD_SIZE",
                           "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID"}) {
    INFO(name);
    CHECK(environment_describes_job(env_of({{name, "0"}})));
  }
}

TEST_CASE("an MPI rank takes its place from the communicator and its node from mpirun or srun",
          "[collective]") {
  std::vector<LaunchEnv> mpirun(2), srun(2), bare(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    mpirun[r] = mpi_launch_env(comm.rank(), comm.world_size(),
                               env_of({{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(comm.rank())},
                                       {"SLURM_STEP_TASKS_PER_NODE", "9"}}));
    srun[r] =
        mpi_launch_env(comm.rank(), comm.world_size(),
                       env_of({{"SLURM_STEP_TASKS_PER_NODE", "2(x3)"}, {"SLURM_LOCALID", "1"}}));
    bare[r] = mpi_launch_env(comm.rank(), comm.world_size(), env_of({}));
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const auto i = static_cast<std::size_t>(r);
    CHECK(mpirun[i].rank == r);
    CHECK(mpirun[i].world_size == 2);
    CHECK(mpirun[i].source == "MPI");
    CHECK(mpirun[i].local_world_size == 2);  // mpirun's variable first
    CHECK(mpirun[i].local_rank == r);
    CHECK(srun[i].local_world_size == 2);  // "2(x3)": the first node's count
    CHECK(srun[i].local_rank == 1);
    CHECK(bare[i].local_world_size == 1);
    CHECK(bare[i].local_rank == 0);
    CHECK(bare[i].restart_count == 0);
  }
}
