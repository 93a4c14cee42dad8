// read_launch_env: ruccl-run's, torchrun's and OpenMPI's variables (Slurm's in slurm_env.cpp).
#include "collective/launch/launch_env.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>

#include "collective/common/collective_error.h"
#include "collective/launch/launch_env_reader.h"
#include "collective/launch/launch_sources.h"

namespace ruccl {
namespace launch_detail {

void finish_common(const LaunchEnvReader& env, LaunchEnv& job, const char* restart_fallback,
                   const std::string& job_id) {
  if (job.master_addr.empty()) {
    std::optional<std::string> addr = env.master_addr("MASTER_ADDR");
    if (!addr) {
      if (job.num_nodes > 1) {
        env.fail_value(
            "RUCCL_MASTER_ADDR or MASTER_ADDR",
            str("the address of rank 0's host, since the job spans ", job.num_nodes, " nodes"),
            std::nullopt);
      }
      addr = "127.0.0.1";  // every rank is on this host
    }
    job.master_addr = *addr;
  }
  if (job.master_port == 0) {
    const std::optional<std::uint16_t> port = env.master_port();
    if (!port) {
      env.fail_value("RUCCL_MASTER_PORT or MASTER_PORT",
                     "the rendezvous port, an integer in [1, 65535]", std::nullopt);
    }
    job.master_port = *port;
  }
  if (const std::optional<std::string> id = env.get("RUCCL_SESSION_ID")) {
    try {
      job.session_id = parse_session_id(*id, "RUCCL_SESSION_ID");
    } catch (const CollectiveError& e) {
      throw CollectiveError(CollectiveErrorKind::InvalidConfig, str(env.context(), e.what()));
    }
  }
  const std::string where = str("@", job.master_addr, ":", job.master_port);
  job.session_seed = job_id.empty() ? job.source + where : str(job.source, ":", job_id, where);
  const char* restart = env.has("RUCCL_RESTART_COUNT") || restart_fallback == nullptr
                            ? "RUCCL_RESTART_COUNT"
                            : restart_fallback;
  job.restart_count = env.optional_integer(restart, 0, std::numeric_limits<int>::max()).value_or(0);
}

// Node placement when only the local size is known: nodes hold consecutive blocks of
// `local_world_size` ranks. Checks that the local rank says the same.
void place_in_blocks(const LaunchEnvReader& env, LaunchEnv& job, const char* world_name,
                     const char* local_world_name, const char* local_rank_name,
                     const char* advice) {
  if (job.world_size % job.local_world_size != 0) {
    env.fail(local_world_name,
             str("a divisor of ", world_name, "=", job.world_size, " (", advice, ")"));
  }
  job.num_nodes = job.world_size / job.local_world_size;
  job.node_rank = job.rank / job.local_world_size;
  if (job.local_rank != job.rank % job.local_world_size) {
    env.fail(local_rank_name, str("rank % local size = ", job.rank, " % ", job.local_world_size,
                                  " = ", job.rank % job.local_world_size,
                                  ", since nodes hold consecutive blocks of ranks (", advice, ")"));
  }
}

LaunchEnv read_ruccl_run(const LaunchEnvReader& env) {
  LaunchEnv job;
  job.source = "ruccl-run";
  job.world_size = env.integer("RUCCL_WORLD_SIZE", 1, kMaxLaunchWorldSize);
  job.rank = env.index("RUCCL_RANK", job.world_size, "RUCCL_WORLD_SIZE");
  const char* node_vars[] = {"RUCCL_NUM_NODES", "RUCCL_NODE_RANK", "RUCCL_LOCAL_WORLD_SIZE",
                             "RUCCL_LOCAL_RANK"};
  bool any_node_var = false;
  for (const char* name : node_vars) any_node_var = any_node_var || env.has(name);
  if (!any_node_var) {  // one node: local = global
    job.local_rank = job.rank;
    job.local_world_size = job.world_size;
  } else {
    for (const char* name : node_vars) {
      if (!env.has(name)) {
        env.fail(name,
                 "a value, since RUCCL_NUM_NODES, RUCCL_NODE_RANK, RUCCL_LOCAL_WORLD_SIZE "
                 "and RUCCL_LOCAL_RANK go together (set all four or none)");
      }
    }
    job.num_nodes = env.integer("RUCCL_NUM_NODES", 1, job.world_size,
                                str("an integer in [1, RUCCL_WORLD_SIZE=", job.world_size, "]"));
    job.local_world_size =
        env.integer("RUCCL_LOCAL_WORLD_SIZE", 1, job.world_size,
                    str("an integer in [1, RUCCL_WORLD_SIZE=", job.world_size, "]"));
    if (static_cast<long long>(job.num_nodes) * job.local_world_size != job.world_size) {
      env.fail("RUCCL_WORLD_SIZE",
               str("RUCCL_NUM_NODES x RUCCL_LOCAL_WORLD_SIZE = ", job.num_nodes, " x ",
                   job.local_world_size, " = ",
                   static_cast<long long>(job.num_nodes) * job.local_world_size));
    }
    job.node_rank = env.index("RUCCL_NODE_RANK", job.num_nodes, "RUCCL_NUM_NODES");
    job.local_rank = env.index("RUCCL_LOCAL_RANK", job.local_world_size, "RUCCL_LOCAL_WORLD_SIZE");
    const int expected_rank = job.node_rank * job.local_world_size + job.local_rank;
    if (job.rank != expected_rank) {
      env.fail("RUCCL_RANK",
               str("RUCCL_NODE_RANK x RUCCL_LOCAL_WORLD_SIZE + RUCCL_LOCAL_RANK = ", job.node_rank,
                   " x ", job.local_world_size, " + ", job.local_rank, " = ", expected_rank));
    }
  }
  finish_common(env, job, nullptr, "");
  return job;
}

LaunchEnv read_torchrun(const LaunchEnvReader& env) {
  LaunchEnv job;
  job.source = "torchrun";
  job.world_size = env.integer("WORLD_SIZE", 1, kMaxLaunchWorldSize);
  job.rank = env.index("RANK", job.world_size, "WORLD_SIZE");
  job.local_world_size = env.integer("LOCAL_WORLD_SIZE", 1, job.world_size,
                                     str("an integer in [1, WORLD_SIZE=", job.world_size, "]"));
  job.local_rank = env.index("LOCAL_RANK", job.local_world_size, "LOCAL_WORLD_SIZE");
  if (env.has("GROUP_RANK")) {
    // torchrun's nodes may run different numbers of processes: no block arithmetic to check.
    const int max_nodes = job.world_size - job.local_world_size + 1;
    job.num_nodes =
        env.integer("GROUP_WORLD_SIZE", 1, max_nodes,
                    str("an integer in [1, WORLD_SIZE - LOCAL_WORLD_SIZE + 1 = ", max_nodes,
                        "] (GROUP_RANK is set)"));
    job.node_rank = env.index("GROUP_RANK", job.num_nodes, "GROUP_WORLD_SIZE");
  } else {
    place_in_blocks(
        env, job, "WORLD_SIZE", "LOCAL_WORLD_SIZE", "LOCAL_RANK",
        "set GROUP_RANK and GROUP_WORLD_SIZE when nodes run different numbers of processes");
  }
  const std::string run_id = env.get("TORCHELASTIC_RUN_ID").value_or("");
  finish_common(env, job, "TORCHELASTIC_RESTART_COUNT", run_id);
  return job;
}

LaunchEnv read_openmpi(const LaunchEnvReader& env) {
  LaunchEnv job;
  job.source = "openmpi";
  job.world_size = env.integer("OMPI_COMM_WORLD_SIZE", 1, kMaxLaunchWorldSize);
  job.rank = env.index("OMPI_COMM_WORLD_RANK", job.world_size, "OMPI_COMM_WORLD_SIZE");
  job.local_world_size =
      env.integer("OMPI_COMM_WORLD_LOCAL_SIZE", 1, job.world_size,
                  str("an integer in [1, OMPI_COMM_WORLD_SIZE=", job.world_size, "]"));
  job.local_rank =
      env.index("OMPI_COMM_WORLD_LOCAL_RANK", job.local_world_size, "OMPI_COMM_WORLD_LOCAL_SIZE");
  // OpenMPI names no node index (OMPI_COMM_WORLD_NODE_RANK is a rank on the node across all
  // jobs): RUCCL_NUM_NODES / RUCCL_NODE_RANK give it, else mpirun's default placement does.
  if (env.has("RUCCL_NUM_NODES") || env.has("RUCCL_NODE_RANK")) {
    const int max_nodes = job.world_size - job.local_world_size + 1;
    job.num_nodes = env.integer(
        "RUCCL_NUM_NODES", 1, max_nodes,
        str("an integer in [1, OMPI_COMM_WORLD_SIZE - OMPI_COMM_WORLD_LOCAL_SIZE + 1 = ", max_nodes,
            "] (set together with RUCCL_NODE_RANK)"));
    job.node_rank = env.index("RUCCL_NODE_RANK", job.num_nodes, "RUCCL_NUM_NODES");
  } else {
    place_in_blocks(env, job, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                    "OMPI_COMM_WORLD_LOCAL_RANK",
                    "with --map-by node or uneven nodes, set RUCCL_NUM_NODES and RUCCL_NODE_RANK");
  }
  const char* id_name =
      env.first_set({"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"});
  finish_common(env, job, nullptr, id_name ? *env.get(id_name) : std::string());
  return job;
}

}  // namespace launch_detail

namespace {

/// The launchers read_launch_env knows, in the order it tries them: a source applies when either
/// of its variables is set.
struct LaunchSource {
  const char* first;
  const char* second;  ///< nullptr: one variable
  const char* what;    ///< names the source in errors
  LaunchEnv (*read)(const launch_detail::LaunchEnvReader& env);
};

// OpenMPI before Slurm: mpirun inside an sbatch script leaves the batch step's SLURM_PROCID=0 in
// every rank's environment, while OMPI_COMM_WORLD_* come from the mpirun that started us.
constexpr LaunchSource kLaunchSources[] = {
    {"RUCCL_RANK", "RUCCL_WORLD_SIZE", "ruccl-run's variables", launch_detail::read_ruccl_run},
    {"RANK", "WORLD_SIZE", "torchrun's variables", launch_detail::read_torchrun},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OpenMPI's variables",
     launch_detail::read_openmpi},
    {"SLURM_PROCID", nullptr, "Slurm's variables", launch_detail::read_slurm},
};

const LaunchSource* launch_source(const EnvLookup& env) {
  for (const LaunchSource& source : kLaunchSources) {
    if (env(source.first).has_value() || (source.second && env(source.second).has_value())) {
      return &source;
    }
  }
  return nullptr;
}

}  // namespace

bool environment_describes_job(const EnvLookup& env) { return launch_source(env) != nullptr; }

LaunchEnv read_launch_env(const EnvLookup& env) {
  if (const LaunchSource* source = launch_source(env)) {
    return source->read(launch_detail::LaunchEnvReader(env, source->what));
  }
  throw CollectiveError(
      CollectiveErrorKind::InvalidConfig,
      "read_launch_env: expected a launch environment, got none: looked for RUCCL_RANK or "
      "RUCCL_WORLD_SIZE (ruccl-run), RANK or WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK or "
      "OMPI_COMM_WORLD_SIZE (OpenMPI's mpirun) and SLURM_PROCID (Slurm's srun), and none is set. "
      "Start the program with ruccl-run, torchrun, mpirun or srun, or set RUCCL_RANK, "
      "RUCCL_WORLD_SIZE and RUCCL_MASTER_PORT yourself");
}

LaunchEnv mpi_launch_env(int rank, int world_size, const EnvLookup& env) {
  LaunchEnv job;
  job.world_size = world_size;
  job.rank = rank;
  job.source = "MPI";
  // atoi, as the first programs that read these did: "2(x3)" reads as 2, anything unparsable 0.
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

std::string describe(const LaunchEnv& job) {
  const std::string rendezvous =
      job.master_port == 0 && job.master_addr.empty()
          ? std::string("no rendezvous")  // an MPI job: MPI knows the ranks
          : str("rendezvous at ", job.master_addr, ":", job.master_port);
  return str("rank ", job.rank, " of ", job.world_size, " (local rank ", job.local_rank, " of ",
             job.local_world_size, ", node ", job.node_rank, " of ", job.num_nodes, "), ",
             rendezvous, ", from ", job.source, "'s variables");
}

}  // namespace ruccl
