// read_slurm: a task started by srun. The step's variables (SLURM_STEP_*) come first: inside an
// allocation, the job-wide ones (SLURM_NTASKS, SLURM_JOB_NODELIST, ...) describe the allocation,
// which a step may use only part of.
#include <limits>

#include "collective/common/collective_error.h"
#include "collective/launch/launch_sources.h"
#include "collective/launch/slurm_hostlist.h"

namespace ruccl::launch_detail {
namespace {

// The first of `names` that is set; fails naming all of them when none is.
const char* required_one_of(const LaunchEnvReader& env, std::initializer_list<const char*> names,
                            std::string_view expected) {
  if (const char* name = env.first_set(names)) return name;
  std::string all;
  for (const char* name : names) all += all.empty() ? name : str(" or ", name);
  env.fail_value(all, expected, std::nullopt);
}

// Rethrows a parse error of a Slurm list as an error about variable `name`.
template <typename Fn>
auto about(const LaunchEnvReader& env, const char* name, Fn&& fn) {
  try {
    return fn();
  } catch (const CollectiveError& e) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str(env.context(), name, ": ", e.what()));
  }
}

int local_world_size(const LaunchEnvReader& env, const LaunchEnv& job, const char* world_name,
                     const char* nodes_name) {
  if (const char* name = env.first_set({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    const std::string text = *env.get(name);
    const std::vector<int> per_node = about(env, name, [&] {
      return expand_slurm_tasks_per_node(text, static_cast<std::size_t>(job.num_nodes) + 1);
    });
    long long total = 0;
    for (const int n : per_node) total += n;
    if (per_node.size() != static_cast<std::size_t>(job.num_nodes) || total != job.world_size) {
      env.fail(name, str("task counts of ", nodes_name, "=", job.num_nodes, " nodes adding up to ",
                         world_name, "=", job.world_size, " (this list has ", per_node.size(),
                         " nodes and ", total, " tasks)"));
    }
    return per_node[static_cast<std::size_t>(job.node_rank)];
  }
  if (env.has("SLURM_NTASKS_PER_NODE")) {
    const int n = env.integer("SLURM_NTASKS_PER_NODE", 1, job.world_size);
    if (static_cast<long long>(n) * job.num_nodes != job.world_size) {
      env.fail("SLURM_NTASKS_PER_NODE", str("a count that, times ", nodes_name, "=", job.num_nodes,
                                            " nodes, makes ", world_name, "=", job.world_size));
    }
    return n;
  }
  env.fail_value("SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE or SLURM_NTASKS_PER_NODE",
                 "the tasks of each node (srun sets SLURM_STEP_TASKS_PER_NODE)", std::nullopt);
}

}  // namespace

LaunchEnv read_slurm(const LaunchEnvReader& env) {
  LaunchEnv job;
  job.source = "slurm";
  const char* world_name =
      required_one_of(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"},
                      "the number of tasks of the step (run under srun)");
  job.world_size = env.integer(world_name, 1, kMaxLaunchWorldSize);
  job.rank = env.index("SLURM_PROCID", job.world_size, world_name);
  const char* nodes_name =
      required_one_of(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"},
                      "the number of nodes of the step (run under srun)");
  job.num_nodes = env.integer(nodes_name, 1, job.world_size,
                              str("an integer in [1, ", world_name, "=", job.world_size, "]"));
  job.node_rank = env.index("SLURM_NODEID", job.num_nodes, nodes_name);
  job.local_world_size = local_world_size(env, job, world_name, nodes_name);
  job.local_rank = env.index("SLURM_LOCALID", job.local_world_size, "tasks on this node");

  // Rank 0 serves the store; Slurm places task 0 on the first node of the step (block, cyclic
  // and plane distributions). SLURM_LAUNCH_NODE_IPADDR is not used: srun started on a login node
  // names the login node, where no rank runs.
  if (std::optional<std::string> addr = env.master_addr("MASTER_ADDR")) {
    job.master_addr = *addr;
  } else {
    const char* list_name = required_one_of(
        env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"},
        "the step's node list, whose first host serves the rendezvous (or RUCCL_MASTER_ADDR)");
    const std::string list = *env.get(list_name);
    const std::size_t hosts = about(env, list_name, [&] { return count_slurm_hosts(list); });
    const bool step_list = std::string_view(list_name) == "SLURM_STEP_NODELIST";
    if (step_list ? hosts != static_cast<std::size_t>(job.num_nodes)
                  : hosts < static_cast<std::size_t>(job.num_nodes)) {
      env.fail(list_name, str(step_list ? "" : "at least ", nodes_name, "=", job.num_nodes,
                              " hosts (this list names ", hosts, ")"));
    }
    job.master_addr = env.checked_address(list_name, first_slurm_host(list));
  }
  const char* job_name = env.first_set({"SLURM_JOB_ID", "SLURM_JOBID"});
  std::string job_id;
  if (job_name != nullptr) {
    const int id = env.integer(job_name, 0, std::numeric_limits<int>::max());
    const int step =
        env.optional_integer("SLURM_STEP_ID", 0, std::numeric_limits<int>::max()).value_or(0);
    job_id = str(id, ".", step);
    if (!env.has("RUCCL_MASTER_PORT") && !env.has("MASTER_PORT")) {
      job.master_port =
          static_cast<std::uint16_t>(kSlurmPortBase + (static_cast<std::uint64_t>(id) * 64 +
                                                       static_cast<std::uint64_t>(step)) %
                                                          kSlurmPortSpan);
    }
  } else if (!env.has("RUCCL_MASTER_PORT") && !env.has("MASTER_PORT")) {
    env.fail_value("RUCCL_MASTER_PORT or MASTER_PORT or SLURM_JOB_ID",
                   "the rendezvous port, or the job id it is derived from", std::nullopt);
  }
  finish_common(env, job, "SLURM_RESTART_COUNT", job_id);
  return job;
}

}  // namespace ruccl::launch_detail
