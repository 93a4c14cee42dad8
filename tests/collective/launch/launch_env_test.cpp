// read_launch_env: each launcher's variables, their precedence, and an error naming the variable,
// what was expected, what came and the source for every missing, malformed or inconsistent one.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "collective/common/collective_error.h"
#include "collective/launch/launch_env.h"

using namespace ruccl;

namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup lookup(const Vars& vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

LaunchEnv read(const Vars& vars) { return read_launch_env(lookup(vars)); }

// The message of the InvalidConfig error read(vars) throws ("" when it throws nothing).
std::string error_of(const Vars& vars) {
  try {
    (void)read(vars);
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    return e.what();
  }
  return "";
}

Vars with(Vars vars, const std::string& name, const std::string& value) {
  vars[name] = value;
  return vars;
}
Vars without(Vars vars, const std::string& name) {
  vars.erase(name);
  return vars;
}

// Rank 3 of 4 on two nodes of two, as ruccl-run sets it.
const Vars kRucclRun = {{"RUCCL_RANK", "3"},
                        {"RUCCL_WORLD_SIZE", "4"},
                        {"RUCCL_LOCAL_RANK", "1"},
                        {"RUCCL_LOCAL_WORLD_SIZE", "2"},
                        {"RUCCL_NODE_RANK", "1"},
                        {"RUCCL_NUM_NODES", "2"},
                        {"RUCCL_MASTER_ADDR", "10.1.2.3"},
                        {"RUCCL_MASTER_PORT", "29500"},
                        {"RUCCL_SESSION_ID", "00112233445566778899AABBCCDDEEFF"},
                        {"RUCCL_RESTART_COUNT", "2"}};

// Rank 5 of 6 on the second of two nodes, as torchrun sets it.
const Vars kTorchrun = {{"RANK", "5"},
                        {"WORLD_SIZE", "6"},
                        {"LOCAL_RANK", "2"},
                        {"LOCAL_WORLD_SIZE", "3"},
                        {"GROUP_RANK", "1"},
                        {"GROUP_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "trainer-0"},
                        {"MASTER_PORT", "29400"},
                        {"TORCHELASTIC_RUN_ID", "job42"},
                        {"TORCHELASTIC_RESTART_COUNT", "1"}};

// Task 4 of 5 on the third node of node[01-03] with "2(x2),1" tasks, as srun sets it.
const Vars kSlurm = {{"SLURM_PROCID", "4"},
                     {"SLURM_STEP_NUM_TASKS", "5"},
                     {"SLURM_LOCALID", "0"},
                     {"SLURM_NODEID", "2"},
                     {"SLURM_STEP_NUM_NODES", "3"},
                     {"SLURM_STEP_NODELIST", "node[01-03]"},
                     {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
                     {"SLURM_JOB_ID", "1234"},
                     {"SLURM_STEP_ID", "7"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_NNODES", "4"},
                     {"SLURM_JOB_NODELIST", "node[00-03]"},
                     {"SLURM_TASKS_PER_NODE", "2(x4)"},
                     {"SLURM_LAUNCH_NODE_IPADDR", "10.9.9.9"}};

// Rank 3 of 4, two per node, as OpenMPI 4.1's mpirun sets it (values seen under mpirun here).
const Vars kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "3"},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                       {"OMPI_COMM_WORLD_NODE_RANK", "1"},
                       {"OMPI_MCA_ess_base_jobid", "1426456577"},
                       {"PMIX_NAMESPACE", "1426456577"},
                       {"MASTER_ADDR", "host-a"},
                       {"MASTER_PORT", "29501"}};

}  // namespace

TEST_CASE("read_launch_env reads every field of ruccl-run's variables", "[collective][launch]") {
  const LaunchEnv job = read(kRucclRun);
  CHECK(job.source == "ruccl-run");
  CHECK(job.rank == 3);
  CHECK(job.world_size == 4);
  CHECK(job.local_rank == 1);
  CHECK(job.local_world_size == 2);
  CHECK(job.node_rank == 1);
  CHECK(job.num_nodes == 2);
  CHECK(job.master_addr == "10.1.2.3");
  CHECK(job.master_port == 29500);
  REQUIRE(job.session_id.has_value());
  CHECK(format_session_id(*job.session_id) == "00112233445566778899aabbccddeeff");
  CHECK((*job.session_id)[0] == 0x00);
  CHECK((*job.session_id)[15] == 0xff);
  CHECK(job.restart_count == 2);
  CHECK(job.session_seed == "ruccl-run@10.1.2.3:29500");
  CHECK(describe(job) ==
        "rank 3 of 4 (local rank 1 of 2, node 1 of 2), rendezvous at 10.1.2.3:29500, from "
        "ruccl-run's variables");
}

TEST_CASE("ruccl-run's variables without node variables make a one-node job on loopback",
          "[collective][launch]") {
  const LaunchEnv job =
      read({{"RUCCL_RANK", "1"}, {"RUCCL_WORLD_SIZE", "3"}, {"RUCCL_MASTER_PORT", "4000"}});
  CHECK(job.local_rank == 1);
  CHECK(job.local_world_size == 3);
  CHECK(job.node_rank == 0);
  CHECK(job.num_nodes == 1);
  CHECK(job.master_addr == "127.0.0.1");
  CHECK(!job.session_id.has_value());
  CHECK(job.restart_count == 0);
  CHECK(job.session_seed == "ruccl-run@127.0.0.1:4000");
}

TEST_CASE("read_launch_env reads torchrun's variables", "[collective][launch]") {
  const LaunchEnv job = read(kTorchrun);
  CHECK(job.source == "torchrun");
  CHECK(job.rank == 5);
  CHECK(job.world_size == 6);
  CHECK(job.local_rank == 2);
  CHECK(job.local_world_size == 3);
  CHECK(job.node_rank == 1);
  CHECK(job.num_nodes == 2);
  CHECK(job.master_addr == "trainer-0");
  CHECK(job.master_port == 29400);
  CHECK(job.restart_count == 1);
  CHECK(job.session_seed == "torchrun:job42@trainer-0:29400");
  CHECK(!job.session_id.has_value());

  SECTION("without GROUP_RANK the nodes are consecutive blocks of LOCAL_WORLD_SIZE ranks") {
    const LaunchEnv derived = read(without(without(kTorchrun, "GROUP_RANK"), "GROUP_WORLD_SIZE"));
    CHECK(derived.node_rank == 1);
    CHECK(derived.num_nodes == 2);
  }
  SECTION("GROUP_WORLD_SIZE may describe nodes with different numbers of processes") {
    const LaunchEnv uneven = read(with(kTorchrun, "GROUP_WORLD_SIZE", "4"));  // 3 + 1 + 1 + 1
    CHECK(uneven.num_nodes == 4);
    CHECK(uneven.node_rank == 1);
  }
}

TEST_CASE("read_launch_env reads a Slurm step, preferring the step's variables to the job's",
          "[collective][launch]") {
  const LaunchEnv job = read(kSlurm);
  CHECK(job.source == "slurm");
  CHECK(job.rank == 4);
  CHECK(job.world_size == 5);
  CHECK(job.local_rank == 0);
  CHECK(job.local_world_size == 1);  // "2(x2),1": the third node runs one task
  CHECK(job.node_rank == 2);
  CHECK(job.num_nodes == 3);
  CHECK(job.master_addr == "node01");  // the step's first host, not SLURM_LAUNCH_NODE_IPADDR
  CHECK(job.master_port == kSlurmPortBase + (1234 * 64 + 7) % kSlurmPortSpan);
  CHECK(job.master_port == 28983);
  CHECK(job.session_seed == "slurm:1234.7@node01:28983");
  CHECK(job.restart_count == 0);

  SECTION("without the step's variables the job's are used") {
    Vars vars = kSlurm;
    for (const char* name : {"SLURM_STEP_NUM_TASKS", "SLURM_STEP_NUM_NODES", "SLURM_STEP_NODELIST",
                             "SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_ID"}) {
      vars.erase(name);
    }
    vars["SLURM_PROCID"] = "7";
    vars["SLURM_NODEID"] = "3";
    vars["SLURM_LOCALID"] = "1";
    const LaunchEnv from_job = read(vars);
    CHECK(from_job.world_size == 8);
    CHECK(from_job.num_nodes == 4);
    CHECK(from_job.local_world_size == 2);
    CHECK(from_job.master_addr == "node00");
    CHECK(from_job.master_port == kSlurmPortBase + (1234 * 64) % kSlurmPortSpan);
  }
  SECTION("SLURM_NTASKS_PER_NODE serves when no tasks-per-node list is set") {
    Vars vars = without(without(kSlurm, "SLURM_STEP_TASKS_PER_NODE"), "SLURM_TASKS_PER_NODE");
    vars["SLURM_STEP_NUM_TASKS"] = "6";
    vars["SLURM_NTASKS_PER_NODE"] = "2";
    vars["SLURM_LOCALID"] = "1";
    CHECK(read(vars).local_world_size == 2);
  }
  SECTION("MASTER_PORT, RUCCL_MASTER_ADDR and SLURM_RESTART_COUNT are honoured") {
    Vars vars = with(with(kSlurm, "MASTER_PORT", "12345"), "RUCCL_MASTER_ADDR", "[fe80::1%eth0]");
    vars["SLURM_RESTART_COUNT"] = "3";
    const LaunchEnv given = read(vars);
    CHECK(given.master_port == 12345);
    CHECK(given.master_addr == "fe80::1%eth0");
    CHECK(given.restart_count == 3);
  }
}

TEST_CASE("read_launch_env reads OpenMPI's variables, placing nodes as mpirun does by default",
          "[collective][launch]") {
  const LaunchEnv job = read(kOpenMpi);
  CHECK(job.source == "openmpi");
  CHECK(job.rank == 3);
  CHECK(job.world_size == 4);
  CHECK(job.local_rank == 1);
  CHECK(job.local_world_size == 2);
  CHECK(job.node_rank == 1);
  CHECK(job.num_nodes == 2);
  CHECK(job.master_addr == "host-a");
  CHECK(job.master_port == 29501);
  CHECK(job.session_seed == "openmpi:1426456577@host-a:29501");

  SECTION("RUCCL_NUM_NODES and RUCCL_NODE_RANK give the node of any placement") {
    Vars vars = with(with(kOpenMpi, "RUCCL_NUM_NODES", "2"), "RUCCL_NODE_RANK", "0");
    vars["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
    vars["OMPI_COMM_WORLD_RANK"] = "2";  // --map-by node: rank 2 is node 0's second process
    const LaunchEnv placed = read(vars);
    CHECK(placed.node_rank == 0);
    CHECK(placed.rank == 2);
  }
  SECTION("one node needs no address, and RUCCL_MASTER_PORT completes the variables") {
    const LaunchEnv one = read({{"OMPI_COMM_WORLD_RANK", "1"},
                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                {"RUCCL_MASTER_PORT", "7000"}});
    CHECK(one.master_addr == "127.0.0.1");
    CHECK(one.master_port == 7000);
    CHECK(one.num_nodes == 1);
    CHECK(one.session_seed == "openmpi@127.0.0.1:7000");
  }
}

TEST_CASE("read_launch_env takes ruccl-run's then torchrun's then OpenMPI's then Slurm's variables",
          "[collective][launch]") {
  Vars all;
  for (const Vars* vars : {&kSlurm, &kOpenMpi, &kTorchrun, &kRucclRun}) {
    for (const auto& [name, value] : *vars) all[name] = value;
  }
  CHECK(read(all).source == "ruccl-run");
  for (const char* name : {"RUCCL_RANK", "RUCCL_WORLD_SIZE", "RUCCL_LOCAL_RANK",
                           "RUCCL_LOCAL_WORLD_SIZE", "RUCCL_NODE_RANK", "RUCCL_NUM_NODES"}) {
    all.erase(name);
  }
  CHECK(read(all).source == "torchrun");
  CHECK(read(all).master_addr == "10.1.2.3");  // RUCCL_MASTER_ADDR wins over MASTER_ADDR
  for (const auto& entry : kTorchrun) all.erase(entry.first);
  CHECK(read(all).source == "openmpi");
  for (const auto& entry : kOpenMpi) all.erase(entry.first);
  const LaunchEnv slurm = read(all);
  CHECK(slurm.source == "slurm");
  CHECK(slurm.master_port == 29500);  // RUCCL_MASTER_PORT
  CHECK(slurm.session_id.has_value());
  CHECK(slurm.restart_count == 2);  // RUCCL_RESTART_COUNT
}

TEST_CASE("read_launch_env with no launch variables lists what it looked for",
          "[collective][launch]") {
  const std::string message = error_of({{"MASTER_ADDR", "x"}, {"RUCCL_MASTER_PORT", "1"}});
  for (const char* name :
       {"RUCCL_RANK", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "ruccl-run"}) {
    CHECK_THAT(message, Catch::Contains(name));
  }
}
