#pragma once
// The job a process belongs to, read from the environment its launcher set: ruccl-run, torchrun,
// Slurm's srun or OpenMPI's mpirun. See docs/collectives.md "Starting a job" for the variables,
// their precedence and every error.
#include <cstdint>
#include <optional>
#include <string>

#include "collective/common/env.h"         // EnvLookup, process_env
#include "collective/common/session_id.h"  // SessionId, parse_session_id, format_session_id

namespace ruccl {

/// The largest world size read_launch_env accepts. Values from outside are capped before anything
/// is sized by them; 2^20 ranks is larger than any job today.
inline constexpr int kMaxLaunchWorldSize = 1 << 20;

/// Ports read_launch_env derives from SLURM_JOB_ID when no port is given:
/// kSlurmPortBase + (SLURM_JOB_ID * 64 + SLURM_STEP_ID) % kSlurmPortSpan, i.e. [20000, 30000):
/// below Linux's ephemeral range (32768 and up), distinct for the 64 first steps of a job and for
/// jobs whose ids differ by less than 156.
inline constexpr int kSlurmPortBase = 20000;
inline constexpr int kSlurmPortSpan = 10000;

/// Where this process sits in its job, and where the job meets.
struct LaunchEnv {
  int rank = 0;              ///< global rank, in [0, world_size)
  int world_size = 1;        ///< number of processes in the job
  int local_rank = 0;        ///< rank among the processes of this node, in [0, local_world_size)
  int local_world_size = 1;  ///< number of processes on this node
  int node_rank = 0;         ///< this node's index, in [0, num_nodes)
  int num_nodes = 1;         ///< number of nodes of the job
  std::string master_addr;   ///< where rank 0 serves the rendezvous store (host name or address)
  std::uint16_t master_port = 0;  ///< its port, in [1, 65535]
  /// RUCCL_SESSION_ID when set (32 hex digits); otherwise empty, and the id is derived from
  /// session_seed.
  std::optional<SessionId> session_id;
  /// A job identity every process of the job computes alike from its own environment
  /// ("slurm:1234.0@node01:21234", "torchrun:<run id>@host:29500", "openmpi:<PMIx namespace>@...",
  /// "ruccl-run@127.0.0.1:41234"): always set. It names the job, it is no secret.
  std::string session_seed;
  /// The variables used: "ruccl-run", "torchrun", "slurm" or "openmpi".
  std::string source;
  /// How many times the job was restarted: RUCCL_RESTART_COUNT, else TORCHELASTIC_RESTART_COUNT
  /// (torchrun) or SLURM_RESTART_COUNT (Slurm), else 0.
  int restart_count = 0;
};

/// Reads the launch environment. Sources, first match wins:
///   ruccl-run (RUCCL_RANK or RUCCL_WORLD_SIZE set), torchrun (RANK or WORLD_SIZE),
///   OpenMPI (OMPI_COMM_WORLD_RANK or OMPI_COMM_WORLD_SIZE), Slurm (SLURM_PROCID).
/// RUCCL_MASTER_ADDR / RUCCL_MASTER_PORT, then MASTER_ADDR / MASTER_PORT, give the rendezvous
/// address for every source; RUCCL_SESSION_ID and RUCCL_RESTART_COUNT apply to every source.
/// Throws CollectiveError(InvalidConfig) naming the variable, what was expected, what came and the
/// source used, for any missing, unparsable, out-of-range or inconsistent variable, and listing
/// what it looked for when no source is set.
///
///   const LaunchEnv job = read_launch_env();  // in a process started by ruccl-run or torchrun
LaunchEnv read_launch_env(const EnvLookup& env = process_env());

/// Whether `env` describes a job a launcher started (a source read_launch_env picks: RUCCL_RANK or
/// RUCCL_WORLD_SIZE, RANK or WORLD_SIZE, OMPI_COMM_WORLD_RANK or OMPI_COMM_WORLD_SIZE,
/// SLURM_PROCID). A training program uses it to choose between one process per rank
/// (Communicator::from_env) and ranks that are threads of this process (InProcessGroup); the
/// variables themselves are checked by read_launch_env, which names any that is missing or wrong.
///
///   if (environment_describes_job()) {
///     Communicator comm = Communicator::from_env(device);   // this process is one rank
///   } else {
///     run_ranks(InProcessGroup::create(2), train_one_rank);  // the ranks are threads
///   }
bool environment_describes_job(const EnvLookup& env = process_env());

/// The LaunchEnv of rank `rank` of a `world_size`-rank MPI job (mpi_engine_from_env()), where MPI
/// knows the ranks and there is no rendezvous: source "MPI", and the processes on this node from
/// mpirun's OMPI_COMM_WORLD_LOCAL_SIZE / OMPI_COMM_WORLD_LOCAL_RANK, else srun's
/// SLURM_STEP_TASKS_PER_NODE ("2" or "2(x3)": the first node's count, the same on every node of an
/// even step) / SLURM_LOCALID, else 1 process, local rank 0.
LaunchEnv mpi_launch_env(int rank, int world_size, const EnvLookup& env = process_env());

/// One line for logs: "rank 1 of 4 (local rank 1 of 2, node 0 of 2), rendezvous at
/// 127.0.0.1:29500, from ruccl-run's variables".
std::string describe(const LaunchEnv& job);

}  // namespace ruccl
