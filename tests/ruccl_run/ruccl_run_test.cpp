// The ruccl-run binary on launch_probe ranks: the environment of each rank, whole prefixed lines,
// exit statuses, ending the others, forwarded signals, restarts, usage errors, two nodes.
#include <catch2/catch.hpp>

#include <csignal>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/ruccl_run/child_process.h"
#include "tests/ruccl_run/secret_file.h"

using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

const std::string kRun = RUCCL_RUN_EXE;
const std::string kProbe = LAUNCH_PROBE_EXE;

std::vector<std::string> ruccl_run(std::vector<std::string> options,
                                   std::vector<std::string> actions) {
  std::vector<std::string> argv{kRun};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(kProbe);
  argv.insert(argv.end(), actions.begin(), actions.end());
  return argv;
}

// "key=value" fields of the "[r] launch ..." line of rank r.
std::map<std::string, std::string> launch_fields(const std::string& out, int rank) {
  const std::vector<std::string> lines =
      lines_starting(out, "[" + std::to_string(rank) + "] launch ");
  REQUIRE(lines.size() == 1);
  std::map<std::string, std::string> fields;
  const std::regex field("(\\w+)=(\\S+)");
  for (auto it = std::sregex_iterator(lines[0].begin(), lines[0].end(), field);
       it != std::sregex_iterator(); ++it) {
    fields[(*it)[1]] = (*it)[2];
  }
  return fields;
}

}  // namespace

TEST_CASE("ruccl-run gives each rank its ranks, the job's address and one session id", "[launch]") {
  const Finished run = run_to_end(ruccl_run({"--nproc-per-node", "3"}, {"read-env", "env"}), 30s);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto first = launch_fields(run.out, 0);
  CHECK(std::regex_match(first.at("session"), std::regex("[0-9a-f]{32}")));
  const int port = std::stoi(first.at("port"));
  CHECK((port >= 1 && port <= 65535));
  for (int r = 0; r < 3; ++r) {
    const auto f = launch_fields(run.out, r);
    CHECK(f.at("rank") == std::to_string(r));
    CHECK(f.at("local") == std::to_string(r));
    CHECK(f.at("world") == "3");
    CHECK(f.at("local_world") == "3");
    CHECK(f.at("node") == "0");
    CHECK(f.at("nodes") == "1");
    CHECK(f.at("addr") == "127.0.0.1");
    CHECK(f.at("port") == first.at("port"));
    CHECK(f.at("session") == first.at("session"));
    CHECK(f.at("restart") == "0");
    CHECK(f.at("source") == "ruccl-run");
    const std::string p = "[" + std::to_string(r) + "] env ";
    for (const std::string& var :
         {"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
          std::string("WORLD_SIZE=3"), std::string("LOCAL_WORLD_SIZE=3"),
          "MASTER_PORT=" + first.at("port"), std::string("MASTER_ADDR=127.0.0.1")}) {
      CHECK(lines_starting(run.out, p + var).size() == 1);
    }
  }
}

TEST_CASE("Two ruccl-run nodes on one machine number their ranks node by node and form one job",
          "[launch]") {
  const std::string id = "0123456789abcdef0123456789abcdef";
  const SecretFile secret(0600);
  std::vector<std::unique_ptr<ChildProcess>> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(std::make_unique<ChildProcess>(
        ruccl_run({"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", std::to_string(node),
                   "--master-addr", "127.0.0.1", "--master-port", "29999", "--secret-file",
                   secret.path()},
                  {"read-env", "join", "leave"}),
        std::vector<std::string>{"RUCCL_SESSION_ID=" + id}));
  }
  for (int node = 0; node < 2; ++node) {
    ChildProcess& n = *nodes[static_cast<std::size_t>(node)];
    REQUIRE(n.wait(30s));
    INFO(n.err());
    REQUIRE(n.exit_code() == 0);
    for (int local = 0; local < 2; ++local) {
      const int rank = node * 2 + local;
      const auto f = launch_fields(n.out(), rank);
      CHECK(f.at("local") == std::to_string(local));
      CHECK(f.at("node") == std::to_string(node));
      CHECK(f.at("nodes") == "2");
      CHECK(f.at("world") == "4");
      CHECK(f.at("port") == "29999");
      CHECK(f.at("session") == id);
      // One job of four ranks across the two launchers, sharing the secret file: 1+2+3+4.
      CHECK(lines_starting(n.out(), "[" + std::to_string(rank) + "] joined sum=10,2").size() == 1);
    }
  }
}

TEST_CASE(
    "Two ruccl-run nodes of two ranks run HostHierarchy's all_reduce: two hosts, the same "
    "bits on every rank, exact integer sums",
    "[launch]") {
  const std::string id = "0123456789abcdef0123456789abcdee";
  const SecretFile secret(0600);
  std::vector<std::unique_ptr<ChildProcess>> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(std::make_unique<ChildProcess>(
        ruccl_run({"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", std::to_string(node),
                   "--master-addr", "127.0.0.1", "--master-port", "29997", "--secret-file",
                   secret.path()},
                  {"hier", "leave"}),
        std::vector<std::string>{"RUCCL_SESSION_ID=" + id}));
  }
  std::string f32;  // rank 0's bits
  for (int node = 0; node < 2; ++node) {
    ChildProcess& n = *nodes[static_cast<std::size_t>(node)];
    REQUIRE(n.wait(30s));
    INFO(n.err());
    REQUIRE(n.exit_code() == 0);
    for (int local = 0; local < 2; ++local) {
      const int rank = node * 2 + local;
      const std::regex line("\\[" + std::to_string(rank) +
                            "\\] hier hosts=2 host_size=2 leader=(\\d) ints=10,4398046511110 "
                            "f32=([0-9a-f,]+)");
      std::smatch m;
      const std::vector<std::string> lines =
          lines_starting(n.out(), "[" + std::to_string(rank) + "] hier ");
      REQUIRE(lines.size() == 1);
      INFO(lines[0]);
      REQUIRE(std::regex_match(lines[0], m, line));
      CHECK(m[1] == (local == 0 ? "1" : "0"));  // one leader per host: its lowest rank
      if (f32.empty()) f32 = m[2];
      CHECK(m[2] == f32);  // bit-identical on every rank of both hosts
    }
  }
}

TEST_CASE("ruccl-run writes whole prefixed lines per stream, never interleaved", "[launch]") {
  constexpr int kRanks = 4, kLines = 300, kLen = 250;
  const Finished run = run_to_end(
      ruccl_run({"--nproc-per-node", std::to_string(kRanks)},
                {"chunked", std::to_string(kLines), std::to_string(kLen), "echunked",
                 std::to_string(kLines), std::to_string(kLen), "partial", "no newline at the end"}),
      60s);
  REQUIRE(run.exit_code == 0);
  for (const std::string* text : {&run.out, &run.err}) {
    std::vector<int> next(kRanks, 0);
    const std::regex line("\\[(\\d)\\] (\\d):(\\d+):([a-z]+)");
    std::size_t start = 0;
    int partial = 0;
    while (start < text->size()) {
      const std::size_t nl = text->find('\n', start);
      REQUIRE(nl != std::string::npos);  // every line, the partial ones too, ends with a newline
      const std::string l = text->substr(start, nl - start);
      start = nl + 1;
      if (std::regex_match(l, std::regex("\\[\\d\\] no newline at the end"))) {
        ++partial;
        continue;
      }
      std::smatch m;
      INFO("line: " << l.substr(0, 80));
      REQUIRE(std::regex_match(l, m, line));
      const int rank = std::stoi(m[1]);
      CHECK(m[2] == std::to_string(rank));
      CHECK(std::stoi(m[3]) == next[static_cast<std::size_t>(rank)]++);
      CHECK(m[4] == std::string(kLen, static_cast<char>('a' + rank)));
    }
    CHECK(next == std::vector<int>(kRanks, kLines));
    CHECK(partial == (text == &run.out ? kRanks : 0));
  }
}

TEST_CASE("ruccl-run exits with the failed rank's code and ends the others promptly", "[launch]") {
  const Finished run =
      run_to_end(ruccl_run({"--nproc-per-node", "3"},
                           {"print", "ready", "if-rank", "1", "exit", "7", "sleep", "60000"}),
                 30s);
  CHECK(run.exit_code == 7);
  CHECK(run.seconds < 10);  // the others sleep 60 s unless ended
  CHECK_THAT(run.err, Catch::Contains("ruccl-run: rank 1 (pid ") &&
                          Catch::Contains(") exited with status 7; ending the other ranks"));
}

TEST_CASE("ruccl-run exits with 128 + the signal that killed a rank", "[launch]") {
  const Finished run = run_to_end(
      ruccl_run({"--nproc-per-node", "2"}, {"if-rank", "0", "raise", "10", "sleep", "60000"}), 30s);
  CHECK(run.exit_code == 128 + 10);
  CHECK(run.seconds < 10);
  CHECK_THAT(run.err, Catch::Contains("rank 0 (pid ") &&
                          Catch::Contains(") was killed by signal 10 (SIGUSR1)"));
}

TEST_CASE("Ranks that ignore SIGTERM are killed when the grace period ends", "[launch]") {
  // Rank 1 fails only once rank 0 ignores SIGTERM.
  const std::string ready = "/tmp/ruccl_run_test_ready_" + std::to_string(::getpid());
  ::unlink(ready.c_str());
  const Finished run =
      run_to_end(ruccl_run({"--nproc-per-node", "2", "--grace-period", "0.5"},
                           {"ignore", "15", "if-rank", "0", "touch", ready, "if-rank", "1",
                            "wait-file", ready, "if-rank", "1", "exit", "3", "sleep", "60000"}),
                 30s);
  ::unlink(ready.c_str());
  CHECK(run.exit_code == 3);
  CHECK(run.seconds >= 0.45);
  CHECK(run.seconds < 8);
  CHECK_THAT(run.err,
             Catch::Contains("rank(s) 0 still running after the 0.5 s grace period: SIGKILL"));
}

TEST_CASE(
    "SIGTERM SIGINT and SIGHUP to ruccl-run reach every rank once, and ruccl-run dies of them",
    "[launch]") {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    INFO("signal " << sig);
    const std::string s = std::to_string(sig);
    ChildProcess run(
        ruccl_run({"--nproc-per-node", "2"}, {"trap", s, "0", "print", "ready", "sleep", "60000"}));
    REQUIRE(run.read_until(
        [](const std::string& out, const std::string&) {
          return out.find("[0] ready") != std::string::npos &&
                 out.find("[1] ready") != std::string::npos;
        },
        20s));
    ::kill(run.pid(), sig);
    REQUIRE(run.wait(20s));
    CHECK(WIFSIGNALED(run.status()));
    CHECK(WTERMSIG(run.status()) == sig);
    CHECK(lines_starting(run.out(), "[0] got " + s).size() == 1);
    CHECK(lines_starting(run.out(), "[1] got " + s).size() == 1);
    CHECK_THAT(run.err(), Catch::Contains("forwarding it to every rank"));
  }
}

TEST_CASE("A second signal to ruccl-run kills the ranks at once", "[launch]") {
  ChildProcess run(ruccl_run({"--nproc-per-node", "2", "--grace-period", "60"},
                             {"ignore", "15", "print", "ready", "sleep", "60000"}));
  REQUIRE(run.read_until(
      [](const std::string& out, const std::string&) {
        return out.find("[0] ready") != std::string::npos &&
               out.find("[1] ready") != std::string::npos;
      },
      20s));
  const auto start = std::chrono::steady_clock::now();
  ::kill(run.pid(), SIGTERM);
  REQUIRE(run.read_until(
      [](const std::string&, const std::string& err) {
        return err.find("forwarding it to every rank") != std::string::npos;
      },
      20s));
  ::kill(run.pid(), SIGTERM);
  REQUIRE(run.wait(20s));
  CHECK(std::chrono::steady_clock::now() - start < 10s);  // not the 60 s grace period
  CHECK(WIFSIGNALED(run.status()));
  CHECK_THAT(run.err(), Catch::Contains("got SIGTERM again: SIGKILL to every rank"));
}

TEST_CASE("A line longer than 64 KiB is written as several prefixed lines", "[launch]") {
  const std::string text(100000, 'x');
  const Finished run = run_to_end(ruccl_run({"--nproc-per-node", "1"}, {"print", text}), 30s);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out == "[0] " + text.substr(0, 65536) + "\n[0] " + text.substr(65536) + "\n");
}

TEST_CASE("A SIGKILLed ruccl-run leaves no rank running", "[launch]") {
  ChildProcess run(ruccl_run({"--nproc-per-node", "2"}, {"pid", "sleep", "60000"}));
  REQUIRE(run.read_until(
      [](const std::string& out, const std::string&) {
        return lines_starting(out, "[0] pid ").size() == 1 &&
               lines_starting(out, "[1] pid ").size() == 1;
      },
      20s));
  std::vector<pid_t> ranks;
  for (const char* p : {"[0] pid ", "[1] pid "})
    ranks.push_back(std::stoi(lines_starting(run.out(), p)[0].substr(8)));
  ::kill(run.pid(), SIGKILL);
  REQUIRE(run.wait(20s));
  const auto gone = [](pid_t pid) {  // no process, or a zombie waiting for its reaper
    FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (f == nullptr) return true;
    char state = '?';
    (void)std::fscanf(f, "%*d (%*[^)]) %c", &state);
    std::fclose(f);
    return state == 'Z' || state == 'X';
  };
  for (int tries = 0; tries < 200 && !(gone(ranks[0]) && gone(ranks[1])); ++tries) ::usleep(10000);
  CHECK(gone(ranks[0]));
  CHECK(gone(ranks[1]));
}

TEST_CASE("--max-restarts restarts the whole job with RUCCL_RESTART_COUNT and a new session",
          "[launch]") {
  const Finished run = run_to_end(ruccl_run({"--nproc-per-node", "2", "--max-restarts", "1"},
                                            {"read-env", "if-restart", "0", "if-rank", "1", "exit",
                                             "4", "if-restart", "0", "sleep", "60000"}),
                                  30s);
  INFO(run.err);
  CHECK(run.exit_code == 0);
  // Rank 1 prints before it fails; rank 0 may be ended before it prints in the failed attempt.
  const std::vector<std::string> launches = lines_starting(run.out, "[1] launch ");
  REQUIRE(launches.size() == 2);
  CHECK_THAT(launches[0], Catch::Contains("restart=0"));
  CHECK_THAT(launches[1], Catch::Contains("restart=1"));
  CHECK(launches[0].substr(launches[0].find("session=")).substr(0, 40) !=
        launches[1].substr(launches[1].find("session=")).substr(0, 40));
  CHECK_THAT(run.out,
             Catch::Contains("[0] launch rank=0 world=2 local=0 local_world=2 node=0 nodes=1") &&
                 Catch::Contains("restart=1 source=ruccl-run"));
  CHECK_THAT(run.err,
             Catch::Contains(
                 "ruccl-run: restarting the job (restart 1 of 1): rank 1 exited with status 4"));
}

TEST_CASE("--max-restarts gives up after the last restart with the failed rank's status",
          "[launch]") {
  const Finished run =
      run_to_end(ruccl_run({"--nproc-per-node", "2", "--max-restarts", "2", "--grace-period", "5"},
                           {"read-env", "if-rank", "1", "exit", "4", "sleep", "60000"}),
                 60s);
  CHECK(run.exit_code == 4);
  CHECK(lines_starting(run.out, "[0] launch ").size() <= 3);  // it may be ended before it prints
  CHECK(lines_starting(run.out, "[1] launch rank=1 world=2 local=1 local_world=2 node=0 nodes=1")
            .size() == 3);
  CHECK_THAT(run.err,
             Catch::Contains("restart 2 of 2") &&
                 Catch::Contains("giving up after 2 restart(s): rank 1 exited with status 4"));
}

TEST_CASE("Bad ruccl-run arguments print a usage message naming the argument and exit 2",
          "[launch]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--nproc-per-node: expected the number of ranks to start, got nothing"},
      {{"--nproc-per-node", "0", kProbe},
       "--nproc-per-node: expected an integer in [1, 1024], got \"0\""},
      {{"--nproc-per-node", "2x", kProbe},
       "--nproc-per-node: expected an integer in [1, 1024], got \"2x\""},
      {{"--nproc-per-node"}, "--nproc-per-node: expected a value, got nothing"},
      {{"--nproc-per-node", "2"}, "PROGRAM: expected the program to run, got nothing"},
      {{"--bogus", "1", kProbe}, "unknown option --bogus"},
      {{"-x", kProbe}, "unknown option -x"},
      {{"--nproc-per-node", "2", "--master-port", "70000", kProbe},
       "--master-port: expected an integer in [1, 65535], got \"70000\""},
      {{"--nproc-per-node", "2", "--grace-period", "-1", kProbe},
       "--grace-period: expected seconds in [0, 86400]"},
      {{"--nproc-per-node", "2", "--session-id", "abc", kProbe},
       "--session-id: refused: a session id on the command line is in every process listing"},
      {{"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "2", kProbe},
       "--node-rank: expected an integer in [0, --nnodes=2), got 2"},
      {{"--nproc-per-node", "2", "--nnodes", "2", "--master-addr", "h", kProbe},
       "--node-rank: expected this node's index in [0, 2)"},
      {{"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "1", kProbe},
       "--master-addr: expected node 0's address"},
      {{"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "1", "--master-addr", "h", kProbe},
       "RUCCL_SESSION_ID: expected the session id every node shares with --nnodes 2, got nothing: "
       "run `ruccl-run --new-session-id`"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv{kRun};
    argv.insert(argv.end(), args.begin(), args.end());
    const Finished run = run_to_end(argv, 10s);
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err,
               Catch::StartsWith("ruccl-run: " + message) && Catch::Contains("usage: ruccl-run"));
  }
  const Finished bad_env =
      run_to_end({kRun, "--nproc-per-node", "1", kProbe}, 10s, {"RUCCL_SESSION_ID=zz"});
  CHECK(bad_env.exit_code == 2);
  CHECK_THAT(bad_env.err, Catch::StartsWith("ruccl-run: RUCCL_SESSION_ID: expected 32 hex digits"));
}

TEST_CASE("ruccl-run says so and exits 127 when the program does not exist", "[launch]") {
  const Finished run = run_to_end({kRun, "--nproc-per-node", "2", "/no/such/program"}, 10s);
  CHECK(run.exit_code == 127);
  CHECK_THAT(run.err, Catch::Contains(
                          "ruccl-run: cannot run \"/no/such/program\": No such file or directory"));
}

TEST_CASE("ruccl-run --new-session-id prints a fresh 32-hex-digit id", "[launch]") {
  const Finished a = run_to_end({kRun, "--new-session-id"}, 10s);
  const Finished b = run_to_end({kRun, "--new-session-id"}, 10s);
  CHECK(a.exit_code == 0);
  CHECK(std::regex_match(a.out, std::regex("[0-9a-f]{32}\n")));
  CHECK(a.out != b.out);
  const Finished help = run_to_end({kRun, "--help"}, 10s);
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::StartsWith("usage: ruccl-run"));
}

TEST_CASE("read_launch_env understands the environment of a real mpirun", "[launch]") {
  if (::access("/usr/bin/mpirun", X_OK) != 0) {
    WARN("skipped: /usr/bin/mpirun (OpenMPI) is not installed");
    return;
  }
  const Finished run = run_to_end({"/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe",
                                   "-np", "2", "-x", "RUCCL_MASTER_PORT=29777", kProbe, "read-env"},
                                  60s, {"RUCCL_MASTER_PORT=29777"});
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  std::set<std::string> lines;
  for (const std::string& l : lines_starting(run.out, "launch "))
    lines.insert(l.substr(0, l.find(" session=")));
  CHECK(
      lines ==
      std::set<std::string>{
          "launch rank=0 world=2 local=0 local_world=2 node=0 nodes=1 addr=127.0.0.1 port=29777",
          "launch rank=1 world=2 local=1 local_world=2 node=0 nodes=1 addr=127.0.0.1 port=29777"});
  CHECK_THAT(run.out, Catch::Contains("source=openmpi"));
}
