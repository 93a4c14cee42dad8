#pragma once
// Whether this process is one rank of a job a launcher started (ruccl-run, torchrun, srun,
// mpirun), and where it sits in an MPI job. A training program uses it to choose between its two
// ways of running: one process per rank (Communicator::from_env) when a launcher describes a job,
// every rank a thread of this process (InProcessGroup) otherwise.
//
//   if (optim::environment_describes_job()) {
//     Communicator comm = Communicator::from_env(device);   // this process is one rank
//   } else {
//     run_ranks(InProcessGroup::create(2), train_one_rank);  // the ranks are threads
//   }
#include "collective/communicator.h"
#include "collective/launch/launch_env.h"

namespace ruccl::optim {

/// True when `env` holds a variable read_launch_env() picks a source by: RUCCL_RANK or
/// RUCCL_WORLD_SIZE (ruccl-run), RANK or WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK or
/// OMPI_COMM_WORLD_SIZE (mpirun), SLURM_PROCID (srun). The job's variables are then checked by
/// read_launch_env, which names any that is missing or wrong.
bool environment_describes_job(const EnvLookup& env = process_env());

/// The LaunchEnv of an MPI job (mpi_engine_from_env()), where MPI knows the ranks and there is no
/// rendezvous: rank and world size from `comm`, source "MPI", and the processes on this node from
/// mpirun's OMPI_COMM_WORLD_LOCAL_SIZE / OMPI_COMM_WORLD_LOCAL_RANK, else srun's
/// SLURM_STEP_TASKS_PER_NODE ("2" or "2(x3)": the first node's count, the same on every node of
/// an even step) / SLURM_LOCALID, else 1 process, local rank 0.
LaunchEnv mpi_launch_env(const Communicator& comm, const EnvLookup& env = process_env());

}  // namespace ruccl::optim
