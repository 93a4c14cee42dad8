// read_launch_env's errors: every missing, unparsable, out-of-range or inconsistent variable is an
// InvalidConfig error naming the variable, what was expected, what came and the source used.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/launch/launch_env.h"

using namespace ruccl;

namespace {

using Vars = std::map<std::string, std::string>;

// The message of the error read_launch_env throws for `vars`, which must be InvalidConfig.
std::string error_of(const Vars& vars) {
  try {
    (void)read_launch_env([&](const char* name) -> std::optional<std::string> {
      const auto it = vars.find(name);
      return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    return e.what();
  }
  FAIL("read_launch_env accepted the variables");
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

const Vars kRucclRun = {{"RUCCL_RANK", "3"},
                        {"RUCCL_WORLD_SIZE", "4"},
                        {"RUCCL_LOCAL_RANK", "1"},
                        {"RUCCL_LOCAL_WORLD_SIZE", "2"},
                        {"RUCCL_NODE_RANK", "1"},
                        {"RUCCL_NUM_NODES", "2"},
                        {"RUCCL_MASTER_ADDR", "10.1.2.3"},
                        {"RUCCL_MASTER_PORT", "29500"}};
const Vars kTorchrun = {{"RANK", "5"},        {"WORLD_SIZE", "6"},
                        {"LOCAL_RANK", "2"},  {"LOCAL_WORLD_SIZE", "3"},
                        {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
const Vars kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "3"},       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                       {"MASTER_ADDR", "host-a"},           {"MASTER_PORT", "29501"}};
const Vars kSlurm = {{"SLURM_PROCID", "4"},
                     {"SLURM_STEP_NUM_TASKS", "5"},
                     {"SLURM_LOCALID", "0"},
                     {"SLURM_NODEID", "2"},
                     {"SLURM_STEP_NUM_NODES", "3"},
                     {"SLURM_STEP_NODELIST", "node[01-03]"},
                     {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
                     {"SLURM_JOB_ID", "1234"}};

}  // namespace

TEST_CASE("A rank out of range is named with its bound and the value that came",
          "[collective][launch]") {
  CHECK(error_of(with(kRucclRun, "RUCCL_RANK", "7")) ==
        "read_launch_env (ruccl-run's variables): RUCCL_RANK: expected an integer in [0, "
        "RUCCL_WORLD_SIZE=4), got \"7\"");
  CHECK(error_of(with(kTorchrun, "RANK", "6")) ==
        "read_launch_env (torchrun's variables): RANK: expected an integer in [0, WORLD_SIZE=6), "
        "got \"6\"");
  CHECK(error_of(with(kOpenMpi, "OMPI_COMM_WORLD_LOCAL_RANK", "2")) ==
        "read_launch_env (OpenMPI's variables): OMPI_COMM_WORLD_LOCAL_RANK: expected an integer "
        "in [0, OMPI_COMM_WORLD_LOCAL_SIZE=2), got \"2\"");
  CHECK(error_of(with(kSlurm, "SLURM_NODEID", "3")) ==
        "read_launch_env (Slurm's variables): SLURM_NODEID: expected an integer in [0, "
        "SLURM_STEP_NUM_NODES=3), got \"3\"");
  CHECK_THAT(
      error_of(with(kRucclRun, "RUCCL_LOCAL_RANK", "2")),
      Catch::Contains(
          "RUCCL_LOCAL_RANK: expected an integer in [0, RUCCL_LOCAL_WORLD_SIZE=2), got \"2\""));
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_NODE_RANK", "2")),
             Catch::Contains("RUCCL_NODE_RANK: expected an integer in [0, RUCCL_NUM_NODES=2)"));
}

TEST_CASE("Integers with signs, spaces, junk or too many digits are refused with the text quoted",
          "[collective][launch]") {
  for (const std::string bad : {"x", "3abc", "-1", "+1", " 1", "1 ", "", "1.0", "0x3",
                                "99999999999999999999", "2147483648"}) {
    INFO("RUCCL_WORLD_SIZE=\"" << bad << "\"");
    CHECK_THAT(error_of(with(kRucclRun, "RUCCL_WORLD_SIZE", bad)),
               Catch::Contains("RUCCL_WORLD_SIZE: expected an integer in [1, 1048576], got \"" +
                               bad + "\""));
  }
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_WORLD_SIZE", "0")), Catch::Contains("got \"0\""));
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_WORLD_SIZE", "1048577")),
             Catch::Contains("[1, 1048576], got \"1048577\""));
  // Control characters are escaped and long values cut in the message.
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_RANK", "3\n")), Catch::Contains("got \"3\\x0a\""));
  const std::string message = error_of(with(kRucclRun, "RUCCL_RANK", std::string(100000, '9')));
  CHECK_THAT(message, Catch::Contains("(100000 characters, cut)"));
  CHECK(message.size() < 400);
}

TEST_CASE("Missing variables are named, with what was expected", "[collective][launch]") {
  CHECK(error_of(without(kRucclRun, "RUCCL_WORLD_SIZE")) ==
        "read_launch_env (ruccl-run's variables): RUCCL_WORLD_SIZE: expected an integer in [1, "
        "1048576], got nothing (not set)");
  CHECK_THAT(error_of(without(kRucclRun, "RUCCL_LOCAL_RANK")),
             Catch::Contains("RUCCL_LOCAL_RANK: expected a value, since RUCCL_NUM_NODES, "
                             "RUCCL_NODE_RANK, RUCCL_LOCAL_WORLD_SIZE and RUCCL_LOCAL_RANK go "
                             "together (set all four or none), got nothing (not set)"));
  CHECK_THAT(error_of(without(kTorchrun, "LOCAL_RANK")),
             Catch::Contains("(torchrun's variables): LOCAL_RANK: expected an integer in [0, "
                             "LOCAL_WORLD_SIZE=3), got nothing (not set)"));
  CHECK_THAT(error_of(with(kTorchrun, "GROUP_RANK", "1")),
             Catch::Contains("GROUP_WORLD_SIZE: expected an integer in [1, WORLD_SIZE - "
                             "LOCAL_WORLD_SIZE + 1 = 4] (GROUP_RANK is set), got nothing"));
  CHECK_THAT(error_of(without(without(kTorchrun, "MASTER_PORT"), "RUCCL_MASTER_PORT")),
             Catch::Contains("(torchrun's variables): RUCCL_MASTER_PORT or MASTER_PORT: expected "
                             "the rendezvous port, an integer in [1, 65535], got nothing"));
  CHECK_THAT(error_of(without(kOpenMpi, "MASTER_ADDR")),
             Catch::Contains("(OpenMPI's variables): RUCCL_MASTER_ADDR or MASTER_ADDR: expected "
                             "the address of rank 0's host, since the job spans 2 nodes, got "
                             "nothing (not set)"));
  CHECK_THAT(error_of(without(kSlurm, "SLURM_STEP_NUM_TASKS")),
             Catch::Contains("(Slurm's variables): SLURM_STEP_NUM_TASKS or SLURM_NTASKS or "
                             "SLURM_NPROCS: expected the number of tasks of the step"));
  CHECK_THAT(error_of(without(kSlurm, "SLURM_STEP_TASKS_PER_NODE")),
             Catch::Contains("SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE or "
                             "SLURM_NTASKS_PER_NODE: expected the tasks of each node"));
  CHECK_THAT(error_of(without(kSlurm, "SLURM_STEP_NODELIST")),
             Catch::Contains("SLURM_STEP_NODELIST or SLURM_JOB_NODELIST or SLURM_NODELIST: "
                             "expected the step's node list"));
  CHECK_THAT(error_of(without(kSlurm, "SLURM_JOB_ID")),
             Catch::Contains("RUCCL_MASTER_PORT or MASTER_PORT or SLURM_JOB_ID: expected the "
                             "rendezvous port, or the job id it is derived from"));
}

TEST_CASE("Inconsistent ruccl-run variables are refused, naming the arithmetic",
          "[collective][launch]") {
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_WORLD_SIZE", "6")),
             Catch::Contains("RUCCL_WORLD_SIZE: expected RUCCL_NUM_NODES x RUCCL_LOCAL_WORLD_SIZE "
                             "= 2 x 2 = 4, got \"6\""));
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_RANK", "2")),
             Catch::Contains("RUCCL_RANK: expected RUCCL_NODE_RANK x RUCCL_LOCAL_WORLD_SIZE + "
                             "RUCCL_LOCAL_RANK = 1 x 2 + 1 = 3, got \"2\""));
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_NUM_NODES", "5")),
             Catch::Contains(
                 "RUCCL_NUM_NODES: expected an integer in [1, RUCCL_WORLD_SIZE=4], got \"5\""));
}

TEST_CASE("Ranks that do not sit in blocks per node are refused with the way out",
          "[collective][launch]") {
  CHECK_THAT(error_of(with(kTorchrun, "WORLD_SIZE", "7")),
             Catch::Contains("LOCAL_WORLD_SIZE: expected a divisor of WORLD_SIZE=7 (set GROUP_RANK "
                             "and GROUP_WORLD_SIZE when nodes run different numbers of processes), "
                             "got \"3\""));
  // mpirun --map-by node: rank 1 is the first process of node 1.
  const Vars by_node =
      with(with(kOpenMpi, "OMPI_COMM_WORLD_RANK", "1"), "OMPI_COMM_WORLD_LOCAL_RANK", "0");
  CHECK_THAT(error_of(by_node),
             Catch::Contains("(OpenMPI's variables): OMPI_COMM_WORLD_LOCAL_RANK: expected rank % "
                             "local size = 1 % 2 = 1, since nodes hold consecutive blocks of ranks "
                             "(with --map-by node or uneven nodes, set RUCCL_NUM_NODES and "
                             "RUCCL_NODE_RANK), got \"0\""));
  CHECK_THAT(error_of(with(kOpenMpi, "RUCCL_NODE_RANK", "1")),
             Catch::Contains("RUCCL_NUM_NODES: expected an integer in [1, OMPI_COMM_WORLD_SIZE - "
                             "OMPI_COMM_WORLD_LOCAL_SIZE + 1 = 3] (set together with "
                             "RUCCL_NODE_RANK), got nothing"));
}

TEST_CASE("Slurm lists that disagree with the step's counts are refused", "[collective][launch]") {
  CHECK_THAT(error_of(with(kSlurm, "SLURM_STEP_TASKS_PER_NODE", "2(x3)")),
             Catch::Contains("SLURM_STEP_TASKS_PER_NODE: expected task counts of "
                             "SLURM_STEP_NUM_NODES=3 nodes adding up to SLURM_STEP_NUM_TASKS=5 "
                             "(this list has 3 nodes and 6 tasks), got \"2(x3)\""));
  CHECK_THAT(error_of(with(kSlurm, "SLURM_STEP_TASKS_PER_NODE", "2,3")),
             Catch::Contains("(this list has 2 nodes and 5 tasks)"));
  CHECK_THAT(error_of(with(kSlurm, "SLURM_STEP_TASKS_PER_NODE", "1(x100000000)")),
             Catch::Contains("SLURM_STEP_TASKS_PER_NODE: expected a Slurm tasks-per-node list like "
                             "\"2(x3),1\", got \"1(x100000000)\" (more than 4 nodes)"));
  CHECK_THAT(
      error_of(with(kSlurm, "SLURM_STEP_NODELIST", "node[01-04]")),
      Catch::Contains("SLURM_STEP_NODELIST: expected SLURM_STEP_NUM_NODES=3 hosts (this list "
                      "names 4), got \"node[01-04]\""));
  CHECK_THAT(error_of(with(kSlurm, "SLURM_STEP_NODELIST", "node[01-03")),
             Catch::Contains("(Slurm's variables): SLURM_STEP_NODELIST: expected a Slurm host list "
                             "like \"node[01-03,7],gpu5\", got \"node[01-03\""));
  CHECK_THAT(error_of(with(kSlurm, "SLURM_LOCALID", "1")),
             Catch::Contains(
                 "SLURM_LOCALID: expected an integer in [0, tasks on this node=1), got \"1\""));
  const Vars uniform =
      with(without(kSlurm, "SLURM_STEP_TASKS_PER_NODE"), "SLURM_NTASKS_PER_NODE", "2");
  CHECK_THAT(
      error_of(uniform),
      Catch::Contains("SLURM_NTASKS_PER_NODE: expected a count that, times "
                      "SLURM_STEP_NUM_NODES=3 nodes, makes SLURM_STEP_NUM_TASKS=5, got \"2\""));
}

TEST_CASE("Bad ports, addresses and session ids are refused", "[collective][launch]") {
  CHECK_THAT(error_of(with(kRucclRun, "RUCCL_MASTER_PORT", "0")),
             Catch::Contains("RUCCL_MASTER_PORT: expected an integer in [1, 65535], got \"0\""));
  CHECK_THAT(
      error_of(with(kRucclRun, "RUCCL_MASTER_PORT", "65536")),
      Catch::Contains("RUCCL_MASTER_PORT: expected an integer in [1, 65535], got \"65536\""));
  CHECK_THAT(
      error_of(with(kTorchrun, "MASTER_PORT", "http")),
      Catch::Contains("(torchrun's variables): MASTER_PORT: expected an integer in [1, 65535]"));
  for (const std::string& bad :
       std::vector<std::string>{"", "host name", "a;rm -rf", std::string(254, 'a'), "[]"}) {
    INFO("RUCCL_MASTER_ADDR=\"" << bad << "\"");
    CHECK_THAT(error_of(with(kRucclRun, "RUCCL_MASTER_ADDR", bad)),
               Catch::Contains("RUCCL_MASTER_ADDR: expected a host name or IP address"));
  }
  CHECK_THAT(error_of(with(kTorchrun, "MASTER_ADDR", "a b")),
             Catch::Contains("MASTER_ADDR: expected a host name or IP address"));
  for (const std::string bad :
       {"0011223344556677", "00112233445566778899aabbccddeeff00",
        "00112233445566778899aabbccddeefg", "00000000000000000000000000000000",
        "00112233-4455-6677-8899-aabbccddeeff"}) {
    INFO("RUCCL_SESSION_ID=\"" << bad << "\"");
    CHECK_THAT(error_of(with(kRucclRun, "RUCCL_SESSION_ID", bad)),
               Catch::Contains("(ruccl-run's variables): RUCCL_SESSION_ID: expected 32 hex digits, "
                               "not all zero (a session id; `ruccl-run --new-session-id` prints a "
                               "fresh one), got \"" +
                               bad + "\""));
  }
  CHECK_THAT(error_of(with(kSlurm, "RUCCL_RESTART_COUNT", "-1")),
             Catch::Contains("(Slurm's variables): RUCCL_RESTART_COUNT: expected an integer in [0, "
                             "2147483647], got \"-1\""));
}

TEST_CASE("parse_session_id and format_session_id round trip", "[collective][launch]") {
  SessionId id{};
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(i * 17 + 1);
  const std::string hex = format_session_id(id);
  CHECK(hex == "0112233445566778899aabbccddeef00");  // 15 * 17 + 1 wraps to 0
  CHECK(parse_session_id(hex, "x") == id);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(parse_session_id(upper, "x") == id);
  CHECK_THROWS_WITH(parse_session_id("zz", "--session-id"),
                    Catch::StartsWith("--session-id: expected 32 hex digits"));
}
