// Real processes over TCP loopback: ranks started the way ruccl-run starts them (the RUCCL_*
// variables), joined by Communicator::from_env (rank 0 serves the store). A rank killed with
// SIGKILL during a large all_reduce fails every other rank promptly with PeerLost naming it; a
// stopped rank (SIGSTOP: no FIN, no reset) is found by its missing heartbeat; a mismatch is
// reported by every process. Four processes as a 2x2 Mesh run collectives on its groups, and a
// rank killed inside one group fails the ranks of the other groups too.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collective/net/socket.h"
#include "collective/store/store.h"
#include "tensor/core/error.h"
#include "tests/collective/transport/shm/dev_shm.h"

extern char** environ;

namespace ruccl {
namespace {

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::uint16_t free_port() {
  net::Socket s = net::listen_tcp("127.0.0.1", 0);
  return net::local_endpoint(s).port;
}

/// A job of `world` tcp_worker processes; each one's stdout goes to its own file.
class Job {
 public:
  Job(int world, std::vector<std::string> args, std::vector<std::string> extra_env = {}) {
    const std::uint16_t port = free_port();
    session_ = session_id_to_hex(random_session_id());
    const std::string& session = session_;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> env;
      for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
      for (const std::string& kv :
           {str("RUCCL_RANK=", r), str("RUCCL_WORLD_SIZE=", world), str("RUCCL_LOCAL_RANK=", r),
            str("RUCCL_LOCAL_WORLD_SIZE=", world), std::string("RUCCL_NODE_RANK=0"),
            std::string("RUCCL_NUM_NODES=1"), std::string("RUCCL_MASTER_ADDR=127.0.0.1"),
            str("RUCCL_MASTER_PORT=", port), str("RUCCL_SESSION_ID=", session)}) {
        env.push_back(kv);
      }
      for (const std::string& kv : extra_env) env.push_back(kv);
      outputs_.push_back(str("/tmp/ruccl_tcp_worker_", ::getpid(), "_", port, "_", r, ".txt"));
      pids_.push_back(spawn(args, env, outputs_.back()));
    }
  }
  ~Job() {
    for (std::size_t r = 0; r < pids_.size(); ++r) {
      if (status_[r] < 0) {
        ::kill(pids_[r], SIGKILL);
        ::waitpid(pids_[r], nullptr, 0);
      }
      ::unlink(outputs_[r].c_str());
    }
  }

  pid_t pid(int r) const { return pids_[static_cast<std::size_t>(r)]; }
  /// The job's session id (32 hex digits): it names the job's shared-memory segments.
  const std::string& session() const { return session_; }
  std::string output(int r) const {
    std::ifstream in(outputs_[static_cast<std::size_t>(r)]);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// Waits until rank r's output contains `text` (false after `limit`).
  bool wait_output(int r, const std::string& text, std::chrono::milliseconds limit) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (output(r).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  /// Waits for rank r to exit (its exit code; -1 after `limit`, when it is killed).
  int wait(int r, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(pid(r), &status, WNOHANG);
      if (done == pid(r)) {
        status_[static_cast<std::size_t>(r)] =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return status_[static_cast<std::size_t>(r)];
      }
      if (std::chrono::steady_clock::now() >= until) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 private:
  pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env,
              const std::string& output) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
    status_.push_back(-1);
    return pid;
  }

  std::string session_;
  std::vector<pid_t> pids_;
  std::vector<int> status_;
  std::vector<std::string> outputs_;
};

using testing::dev_shm_has;

#ifdef RUCCL_SANITIZE
constexpr long long kLossBoundMs = 1000;  // sanitizers slow every rank several times
#else
constexpr long long kLossBoundMs = 100;  // the target for one machine
#endif

// Kills rank `victim` of `job` (every rank inside its loop of calls), then checks that each of
// `others` exits with an error of one of `kinds` naming it, within kLossBoundMs of the kill.
void kill_and_expect_loss(Job& job, int victim, std::initializer_list<int> others,
                          std::initializer_list<std::string> kinds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // well inside a call
  const long long killed_at = monotonic_ns();
  ::kill(job.pid(victim), SIGKILL);
  CHECK(job.wait(victim) == 128 + SIGKILL);
  for (const int r : others) {
    CHECK(job.wait(r, std::chrono::seconds(10)) == 3);
    const std::string out = job.output(r);
    INFO(out);
    std::istringstream line(out.substr(out.find("error ")));
    std::string word, kind;
    long long at = 0;
    line >> word >> kind >> at;
    CHECK(std::find(kinds.begin(), kinds.end(), kind) != kinds.end());
    CHECK_THAT(out, Catch::Contains(str("rank ", victim)));
    const long long ms = (at - killed_at) / 1000000;
    WARN("rank " << r << " failed " << ms << " ms after the kill");
    CHECK(ms < kLossBoundMs);
  }
}

TEST_CASE("tcp processes all_reduce through from_env", "[collective][tcp][process]") {
  Job job(3, {RUCCL_TCP_WORKER, "sum", "300000"});
  for (int r = 0; r < 3; ++r) {
    INFO(job.output(r));
    CHECK(job.wait(r) == 0);
    CHECK_THAT(job.output(r), Catch::Contains(str("ok rank ", r, " of 3")));
  }
}

/// Runs `args` as one process with stdout to a file; returns (exit status, output).
std::pair<int, std::string> run_program(const std::vector<std::string>& args,
                                        std::chrono::seconds limit = std::chrono::seconds(60)) {
  const std::string out = str("/tmp/ruccl_tcp_run_", ::getpid(), "_", free_port(), ".txt");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  REQUIRE(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(out.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text.str()};
}

TEST_CASE("tcp job started by ruccl-run all_reduces in every rank", "[collective][tcp][process]") {
  const auto [status, out] =
      run_program({RUCCL_RUN, "--nproc-per-node", "3", RUCCL_TCP_WORKER, "sum", "100000"});
  INFO(out);
  CHECK(status == 0);
  for (int r = 0; r < 3; ++r) CHECK_THAT(out, Catch::Contains(str("ok rank ", r, " of 3")));
}

TEST_CASE("tcp job started by ruccl-run with a mismatch exits with the ranks' status",
          "[collective][tcp][process]") {
  const auto [status, out] =
      run_program({RUCCL_RUN, "--nproc-per-node", "2", RUCCL_TCP_WORKER, "mismatch"});
  INFO(out);
  CHECK(status == 3);
  CHECK_THAT(out, Catch::Contains("error ShapeMismatch"));
}

TEST_CASE("tcp rank killed during a large all_reduce fails the others promptly naming it",
          "[collective][tcp][process]") {
  Job job(3, {RUCCL_TCP_WORKER, "loop", std::to_string(16 << 20)});
  for (int r = 0; r < 3; ++r) REQUIRE(job.wait_output(r, "started", std::chrono::seconds(60)));
  kill_and_expect_loss(job, 1, {0, 2}, {"PeerLost"});
  // The killed rank's segments were unlinked when the group connected: nothing is left behind.
  CHECK_FALSE(dev_shm_has(str("ruccl-", job.session())));
}

TEST_CASE("tcp processes run collectives on the groups of a 2x2 mesh",
          "[collective][tcp][process]") {
  Job job(4, {RUCCL_TCP_WORKER, "mesh"});
  for (int r = 0; r < 4; ++r) {
    INFO(job.output(r));
    CHECK(job.wait(r) == 0);
    CHECK_THAT(job.output(r), Catch::Contains(str("ok rank ", r)));
  }
}

TEST_CASE("tcp rank killed inside one group of a mesh fails every other rank promptly",
          "[collective][tcp][process]") {
  // Rank 3 dies in the middle of its "tp" group's all_reduces (with rank 2); ranks 0 and 1 loop
  // in the other "tp" group, which shares no rank with it: they fail through the family's failure.
  Job job(4, {RUCCL_TCP_WORKER, "mesh-loop", std::to_string(1 << 20)});
  for (int r = 0; r < 4; ++r) REQUIRE(job.wait_output(r, "started", std::chrono::seconds(60)));
  // PeerLost, or Aborted naming it for a rank that was between two calls when it learnt.
  kill_and_expect_loss(job, 3, {0, 1, 2}, {"PeerLost", "Aborted"});
}

TEST_CASE("tcp stopped rank is found by its missing heartbeat", "[collective][tcp][process]") {
  Job job(2, {RUCCL_TCP_WORKER, "loop", "4096"}, {"RUCCL_HEARTBEAT_TIMEOUT_MS=400"});
  for (int r = 0; r < 2; ++r) REQUIRE(job.wait_output(r, "started", std::chrono::seconds(60)));
  ::kill(job.pid(1), SIGSTOP);  // no FIN, no reset: only the silence tells
  CHECK(job.wait(0, std::chrono::seconds(10)) == 3);
  const std::string out = job.output(0);
  INFO(out);
  CHECK_THAT(out, Catch::Contains("PeerLost") && Catch::Contains("no heartbeat") &&
                      Catch::Contains("rank 1"));
  ::kill(job.pid(1), SIGKILL);
  job.wait(1);
}

TEST_CASE("tcp processes with different shapes all report ShapeMismatch",
          "[collective][tcp][process]") {
  Job job(3, {RUCCL_TCP_WORKER, "mismatch"});
  for (int r = 0; r < 3; ++r) {
    INFO(job.output(r));
    CHECK(job.wait(r) == 3);
    CHECK_THAT(job.output(r), Catch::Contains("error ShapeMismatch"));
  }
}

TEST_CASE("tcp processes all_reduce with the kernel's or a given socket buffer size",
          "[collective][tcp][process]") {
  for (const char* bytes : {"0", "1048576"}) {
    INFO("RUCCL_TCP_SOCKET_BUFFER_BYTES=" << bytes);
    Job job(2, {RUCCL_TCP_WORKER, "sum", "300000"}, {str("RUCCL_TCP_SOCKET_BUFFER_BYTES=", bytes)});
    for (int r = 0; r < 2; ++r) {
      INFO(job.output(r));
      CHECK(job.wait(r) == 0);
      CHECK_THAT(job.output(r), Catch::Contains(str("ok rank ", r, " of 2")));
    }
  }
}

TEST_CASE("tcp processes all_reduce through shared memory or over TCP alone, leaving no segment",
          "[collective][tcp][process][shm]") {
  for (const char* mode : {"auto", "off"}) {
    INFO("RUCCL_TCP_SHARED_MEMORY=" << mode);
    Job job(3, {RUCCL_TCP_WORKER, "sum", "3000000"},
            {str("RUCCL_TCP_SHARED_MEMORY=", mode), "RUCCL_TCP_SHARED_MEMORY_RING_BYTES=524288"});
    for (int r = 0; r < 3; ++r) {
      INFO(job.output(r));
      CHECK(job.wait(r) == 0);
      CHECK_THAT(job.output(r), Catch::Contains(str("ok rank ", r, " of 3")));
    }
    CHECK_FALSE(dev_shm_has(str("ruccl-", job.session())));
  }
}

TEST_CASE("a malformed RUCCL_TCP_SHARED_MEMORY is InvalidConfig naming it",
          "[collective][tcp][process][shm]") {
  for (const auto& [name, value] :
       {std::pair<const char*, const char*>{"RUCCL_TCP_SHARED_MEMORY", "on"},
        {"RUCCL_TCP_SHARED_MEMORY_RING_BYTES", "0"},
        {"RUCCL_TCP_SHARED_MEMORY_RING_BYTES", "2MiB"}}) {
    INFO(name << "=" << value);
    Job job(1, {RUCCL_TCP_WORKER, "sum", "10"}, {str(name, "=", value)});
    INFO(job.output(0));
    CHECK(job.wait(0) == 3);
    CHECK_THAT(job.output(0), Catch::Contains("error InvalidConfig"));
    CHECK_THAT(job.output(0), Catch::Contains(str(name, ": expected")));
  }
}

TEST_CASE("a malformed RUCCL_TCP_SOCKET_BUFFER_BYTES is InvalidConfig naming it",
          "[collective][tcp][process]") {
  for (const char* bytes : {"-1", "4MiB", "4294967296"}) {
    INFO("RUCCL_TCP_SOCKET_BUFFER_BYTES=" << bytes);
    Job job(1, {RUCCL_TCP_WORKER, "sum", "10"}, {str("RUCCL_TCP_SOCKET_BUFFER_BYTES=", bytes)});
    INFO(job.output(0));
    CHECK(job.wait(0) == 3);
    CHECK_THAT(job.output(0), Catch::Contains("error InvalidConfig"));
    CHECK_THAT(job.output(0), Catch::Contains("RUCCL_TCP_SOCKET_BUFFER_BYTES: expected"));
  }
}

}  // namespace
}  // namespace ruccl
