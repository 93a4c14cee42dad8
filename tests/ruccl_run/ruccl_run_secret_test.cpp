// ruccl-run and the job secret (docs/security.md): the secret reaches the ranks in their
// environment only, never in a name another user of the host can see; a secret file others may
// read is refused; RUCCL_REQUIRE_SECRET; ranks with different secrets never form a job; a job
// with a secret computes what one without does.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/ruccl_run/child_process.h"
#include "tests/ruccl_run/secret_file.h"

using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

const std::string kRun = RUCCL_RUN_EXE;
const std::string kProbe = LAUNCH_PROBE_EXE;
// A session id for the jobs below (RUCCL_SESSION_ID), looked for in every visible name.
const std::string kSession = "5e55105e1d0fa11c0ffee0123456789a";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

/// The names in `folder` (one per line), "" when it cannot be read.
std::string names_in(const std::string& folder) {
  std::string names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    names += entry.path().filename().string() + "\n";
  }
  return names;
}

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Two ranks started by hand with torchrun's variables plus `extra[rank]`, each joining.
std::vector<Finished> two_ranks_by_hand(const std::vector<std::vector<std::string>>& extra) {
  const std::string port = std::to_string(free_port());
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env = {"RANK=" + std::to_string(r),       "WORLD_SIZE=2",
                                    "LOCAL_RANK=" + std::to_string(r), "LOCAL_WORLD_SIZE=2",
                                    "MASTER_ADDR=127.0.0.1",           "MASTER_PORT=" + port,
                                    "RUCCL_CONNECT_TIMEOUT_MS=1500"};
    env.insert(env.end(), extra[static_cast<std::size_t>(r)].begin(),
               extra[static_cast<std::size_t>(r)].end());
    ranks.push_back(
        std::make_unique<ChildProcess>(std::vector<std::string>{kProbe, "join", "leave"}, env));
  }
  std::vector<Finished> out;
  for (auto& r : ranks) {
    REQUIRE(r->wait(30s));
    out.push_back({r->exit_code(), r->out(), r->err(), 0.0});
  }
  return out;
}

/// Whether both ranks of `job` printed their "joined" line within 30 s.
bool both_joined(ChildProcess& job) {
  return job.read_until(
      [](const std::string& out, const std::string&) {
        return out.find("[0] joined") != std::string::npos &&
               out.find("[1] joined") != std::string::npos;
      },
      30s);
}

}  // namespace

TEST_CASE("A job under ruccl-run shows its secret and session id in no name others can see",
          "[launch][security]") {
  const SecretFile secret(0600);
  const std::string go = secret.folder() + "/go";
  ChildProcess job({kRun, "--nproc-per-node", "2", "--secret-file", secret.path(), kProbe, "pid",
                    "join", "wait-file", go, "leave"},
                   {"RUCCL_SESSION_ID=" + kSession, "RUCCL_REQUIRE_SECRET=1"});
  const bool joined = both_joined(job);
  INFO(job.err());
  REQUIRE(joined);
  std::vector<std::string> pids = {std::to_string(job.pid())};
  for (const std::string& line : lines_starting(job.out(), "[")) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex("\\] pid (\\d+)"))) pids.push_back(m[1]);
  }
  REQUIRE(pids.size() == 3);

  // What another user can read: socket names, command lines, /dev/shm and /tmp names.
  const std::string unix_names = read_all("/proc/net/unix");
  CHECK(unix_names.find("@ruccl-") != std::string::npos);  // the ranks' bells are up
  std::string visible = unix_names + names_in("/dev/shm") + names_in("/tmp");
  for (const std::string& pid : pids) visible += read_all("/proc/" + pid + "/cmdline");
  visible = lower(visible);
  CHECK(visible.find(secret.hex()) == std::string::npos);
  CHECK(visible.find(kSession) == std::string::npos);
  // The ranks do hold it, in their environment (readable by their owner alone).
  CHECK(read_all("/proc/" + pids[1] + "/environ").find("RUCCL_JOB_SECRET=" + secret.hex()) !=
        std::string::npos);

  std::ofstream(go) << "go\n";
  REQUIRE(job.wait(30s));
  CHECK(job.exit_code() == 0);
  CHECK(lines_starting(job.out(), "[0] joined sum=3,1").size() == 1);
  CHECK(lower(job.out() + job.err()).find(secret.hex()) == std::string::npos);
}

TEST_CASE("ruccl-run refuses a secret file that group or others may read, naming its mode",
          "[launch][security]") {
  for (const mode_t mode : {0644, 0640, 0604}) {
    const SecretFile secret(mode);
    const Finished run =
        run_to_end({kRun, "--nproc-per-node", "1", "--secret-file", secret.path(), kProbe}, 10s);
    CHECK(run.exit_code == 2);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
    CHECK_THAT(run.err, Catch::StartsWith("ruccl-run: --secret-file " + secret.path() +
                                          ": expected a file only its owner can read (mode 0600 "
                                          "or 0400), got mode " +
                                          text + ": run chmod 600"));
  }
  const SecretFile bad(0600);
  std::ofstream(bad.path()) << "not a secret\n";
  const Finished run =
      run_to_end({kRun, "--nproc-per-node", "1", "--secret-file", bad.path(), kProbe}, 10s);
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.err, Catch::Contains("expected 64 hex digits") &&
                          Catch::Contains("got 12 characters") && !Catch::Contains("not a secret"));
}

TEST_CASE("RUCCL_REQUIRE_SECRET=1 fails a rank without a secret at start, naming the variable",
          "[launch][security]") {
  const Finished run =
      run_to_end({kProbe, "join"}, 10s,
                 {"RUCCL_RANK=0", "RUCCL_WORLD_SIZE=1",
                  "RUCCL_MASTER_PORT=" + std::to_string(free_port()), "RUCCL_REQUIRE_SECRET=1"});
  CHECK(run.exit_code == 8);
  CHECK_THAT(run.err, Catch::StartsWith("join-error RUCCL_REQUIRE_SECRET=1: expected "
                                        "RUCCL_JOB_SECRET (64 hex digits) in the environment, got "
                                        "nothing"));
}

TEST_CASE("A job with a secret computes what one without does, and different secrets never meet",
          "[launch][security]") {
  const SecretFile secret(0600);
  const Finished with = run_to_end(
      {kRun, "--nproc-per-node", "2", "--secret-file", secret.path(), kProbe, "join", "leave"},
      30s);
  INFO(with.err);
  REQUIRE(with.exit_code == 0);
  const std::vector<Finished> without = two_ranks_by_hand({{}, {}});  // torchrun-style, no secret
  for (int r = 0; r < 2; ++r) {
    INFO(without[static_cast<std::size_t>(r)].err);
    CHECK(without[static_cast<std::size_t>(r)].exit_code == 0);
    CHECK(without[static_cast<std::size_t>(r)].out == "joined sum=3,1\n");
    CHECK(lines_starting(with.out, "[" + std::to_string(r) + "] joined sum=3,1").size() == 1);
  }

  const SecretFile other(0600);
  const std::vector<Finished> mixed = two_ranks_by_hand(
      {{"RUCCL_JOB_SECRET=" + secret.hex()}, {"RUCCL_JOB_SECRET=" + other.hex()}});
  for (const Finished& rank : mixed) {
    CHECK(rank.exit_code == 8);
    CHECK(rank.out.empty());
    CHECK(lower(rank.err).find(secret.hex()) == std::string::npos);
    CHECK(lower(rank.err).find(other.hex()) == std::string::npos);
  }
  CHECK_THAT(mixed[1].err,
             Catch::Contains("failed authentication") && Catch::Contains("RUCCL_JOB_SECRET"));
}

TEST_CASE("RUCCL_INTEGRITY=mac ranks compute what others do, and need a secret",
          "[launch][security]") {
  const SecretFile secret(0600);
  const std::vector<std::string> mac = {"RUCCL_JOB_SECRET=" + secret.hex(), "RUCCL_INTEGRITY=mac",
                                        "RUCCL_TCP_SHARED_MEMORY=off"};
  for (const Finished& rank : two_ranks_by_hand({mac, mac})) {
    INFO(rank.err);
    CHECK(rank.exit_code == 0);
    CHECK(rank.out == "joined sum=3,1\n");
  }
  for (const Finished& rank :
       two_ranks_by_hand({{"RUCCL_INTEGRITY=mac"}, {"RUCCL_INTEGRITY=mac"}})) {
    CHECK(rank.exit_code == 8);
    CHECK_THAT(rank.err, Catch::Contains("RUCCL_INTEGRITY: expected off, or mac together with "
                                         "RUCCL_JOB_SECRET"));
  }
}

TEST_CASE("An outsider process without the job's secret is refused and the job goes on",
          "[launch][security]") {
  const SecretFile secret(0600);
  const SecretFile wrong(0600);
  const std::string port = std::to_string(free_port());
  const std::string go = secret.folder() + "/go";
  ChildProcess job({kRun, "--nproc-per-node", "2", "--master-port", port, "--secret-file",
                    secret.path(), kProbe, "join", "wait-file", go, "leave"},
                   {"RUCCL_SESSION_ID=" + kSession});
  const bool joined = both_joined(job);
  INFO(job.err());
  REQUIRE(joined);
  // Another process that knows everything but the secret (even the session id) tries to join
  // as rank 1, without a secret and with a wrong one.
  const std::vector<std::string> outsider = {
      "RUCCL_RANK=1", "RUCCL_WORLD_SIZE=2", "RUCCL_MASTER_PORT=" + port,
      "RUCCL_SESSION_ID=" + kSession, "RUCCL_CONNECT_TIMEOUT_MS=1500"};
  const Finished without = run_to_end({kProbe, "join"}, 20s, outsider);
  CHECK(without.exit_code == 8);
  CHECK_THAT(without.err,
             Catch::Contains("closed the connection") && Catch::Contains("it wants a job secret"));
  std::vector<std::string> with_wrong = outsider;
  with_wrong.push_back("RUCCL_JOB_SECRET=" + wrong.hex());
  const Finished impostor = run_to_end({kProbe, "join"}, 20s, with_wrong);
  CHECK(impostor.exit_code == 8);
  CHECK_THAT(impostor.err, Catch::Contains("failed authentication: wrong MAC"));
  CHECK(lower(impostor.err).find(wrong.hex()) == std::string::npos);

  std::ofstream(go) << "go\n";
  REQUIRE(job.wait(30s));
  CHECK(job.exit_code() == 0);
  CHECK(lines_starting(job.out(), "[0] joined sum=3,1").size() == 1);
  CHECK(lines_starting(job.out(), "[1] joined sum=3,1").size() == 1);
}
