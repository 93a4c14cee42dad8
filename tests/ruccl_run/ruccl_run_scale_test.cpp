// Jobs of many processes on this machine under the real ruccl-run (oversubscribed: tens of ranks
// on two cores, so `slow`): the rendezvous of every rank through one store, an all_reduce, a
// barrier and a clean exit; and a rank killed mid-job, which every other rank sees as an error of
// its own (not only ruccl-run ending them), promptly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include <signal.h>

#include "tests/ruccl_run/child_process.h"

using namespace ruccl::testing;
using namespace std::chrono_literals;

namespace {

const std::string kRun = RUCCL_RUN_EXE;
const std::string kProbe = LAUNCH_PROBE_EXE;

std::vector<std::string> job(int ranks, std::vector<std::string> options,
                             const std::vector<std::string>& actions) {
  std::vector<std::string> argv{kRun, "--nproc-per-node", std::to_string(ranks)};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(kProbe);
  argv.insert(argv.end(), actions.begin(), actions.end());
  return argv;
}

}  // namespace

TEST_CASE("A 64-process ruccl-run job meets, all_reduces, passes a barrier and exits cleanly",
          "[launch][slow]") {
  constexpr int kRanks = 64;
  const Finished run = run_to_end(job(kRanks, {}, {"join", "barrier", "leave"}), 240s);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  // sum over ranks of rank + 1, and 0.5 per rank
  const std::string want =
      "joined sum=" + std::to_string(kRanks * (kRanks + 1) / 2) + "," + std::to_string(kRanks / 2);
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r);
    const std::string prefix = "[" + std::to_string(r) + "] ";
    REQUIRE(lines_starting(run.out, prefix + "joined ") == std::vector<std::string>{prefix + want});
    REQUIRE(lines_starting(run.out, prefix + "barrier").size() == 1);
  }
  WARN("64 processes: " << run.seconds << " s from launch to exit");
}

TEST_CASE("A rank killed in a 32-process job: every other rank's collective fails promptly",
          "[launch][slow]") {
  constexpr int kRanks = 32;
  constexpr int kVictim = 13;
  // SIGTERM ignored and a long grace period: the survivors end through their own error, not
  // ruccl-run's signal. The victim is killed once every rank has passed the barrier (so every
  // survivor is in its loop of all_reduces).
  ChildProcess run(job(kRanks, {"--grace-period", "60"},
                       {"ignore", "15", "pid", "join", "barrier", "reduce-until-error"}));
  REQUIRE(run.read_until(
      [](const std::string& out, const std::string&) {
        int passed = 0;
        for (int r = 0; r < kRanks; ++r)
          passed += lines_starting(out, "[" + std::to_string(r) + "] barrier").size() == 1;
        return passed == kRanks;
      },
      240s));
  const std::string pid_line = "[" + std::to_string(kVictim) + "] pid ";
  const std::vector<std::string> pids = lines_starting(run.out(), pid_line);
  REQUIRE(pids.size() == 1);
  ::kill(std::stoi(pids[0].substr(pid_line.size())), SIGKILL);
  REQUIRE(run.wait(120s));
  INFO(run.err());
  // ruccl-run exits with the status of the first rank it sees fail: the victim's SIGKILL, or a
  // survivor that already ended through its own PeerLost (exit 8 from launch_probe).
  REQUIRE((run.exit_code() == 128 + 9 || run.exit_code() == 8));
  const std::regex lost("lost ms=(\\d+) kind=(\\w+) calls=(\\d+)");
  int slowest = 0;
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    INFO("rank " << r);
    const std::vector<std::string> lines =
        lines_starting(run.err(), "[" + std::to_string(r) + "] lost ");
    REQUIRE(lines.size() == 1);
    std::smatch m;
    REQUIRE(std::regex_search(lines[0], m, lost));
    CHECK(m[2] == "PeerLost");
    // How long the failing call waited once the victim was gone: well under the default
    // timeout (the bound leaves room for 31 processes sharing two cores).
    CHECK(std::stoi(m[1]) < 5000);
    slowest = std::max(slowest, std::stoi(m[1]));
  }
  WARN("32 processes, rank " << kVictim << " killed: the slowest survivor's failing call waited "
                             << slowest << " ms");
}
