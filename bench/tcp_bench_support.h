#pragma once
// Helpers of bench/tcp_collective_bench.cpp (starting our ranks: bench/ddp_bench.cpp too): the
// results table every implementation fills, the parser of the "R <op> <bytes> <iters> <median_us>
// <min_us>" lines every peer in bench/peers/ prints (our own ranks print the same), the peer
// commands, and starting our own ranks as processes with the variables ruccl-run sets. A header,
// not a .cpp: bench/CMakeLists.txt makes every bench/*.cpp a program.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collective/launch/launch_env.h"
#include "collective/net/socket.h"
#include "collective/store/in_memory_store.h"
#include "collective/store/store.h"
#include "collective/tcp_group.h"

extern char** environ;

namespace ruccl::bench {

/// Median of one implementation's figures for (op, world, bytes) over the rounds, and why an
/// implementation has none.
struct Results {
  // (impl, op, world, bytes) -> per-round median times in us
  std::map<std::tuple<std::string, std::string, int, std::size_t>, std::vector<double>> times;
  // (impl, op, world) -> reason ("not installed: ...", "U" lines); "" op: every op
  std::map<std::tuple<std::string, std::string, int>, std::string> missing;

  /// The median over rounds, or a negative number when there is none.
  double median(const std::string& impl, const std::string& op, int world,
                std::size_t bytes) const {
    const auto it = times.find({impl, op, world, bytes});
    if (it == times.end() || it->second.empty()) return -1;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  std::string why_missing(const std::string& impl, const std::string& op, int world) const {
    for (const std::string& key : {op, std::string()}) {
      const auto it = missing.find({impl, key, world});
      if (it != missing.end()) return it->second;
    }
    return "";
  }

  /// Reads the R and U lines of `output` (a leading "[rank] " of ruccl-run is skipped).
  /// Returns how many R lines it read.
  int parse(const std::string& impl, int world, const std::string& output) {
    std::istringstream lines(output);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      if (!line.empty() && line[0] == '[') {
        const std::size_t close = line.find("] ");
        if (close != std::string::npos) line = line.substr(close + 2);
      }
      std::istringstream f(line);
      std::string tag, op;
      if (!(f >> tag >> op)) continue;
      if (tag == "U") {
        std::string reason;
        std::getline(f, reason);
        missing[{impl, op, world}] = "unsupported:" + reason;
      } else if (tag == "R") {
        std::size_t bytes = 0;
        int iters = 0;
        double median_us = 0, min_us = 0;
        if (f >> bytes >> iters >> median_us >> min_us) {
          times[{impl, op, world, bytes}].push_back(median_us);
          ++n;
        }
      }
    }
    return n;
  }
};

/// The items of a comma-separated list ("2,4" -> {"2", "4"}).
inline std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream f(text);
  std::string item;
  while (std::getline(f, item, ',')) out.push_back(item);
  return out;
}

/// Output (stdout and stderr) of a shell command.
inline std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  pclose(pipe);
  return out;
}

inline bool command_ok(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

/// Starts `world` copies of `argv` with the RUCCL_* variables ruccl-run sets (a fresh port and
/// session id), waits for them (killing them all after `limit`), and returns rank 0's stdout.
/// Sets `failed` when a rank exits with a non-zero status.
inline std::string run_own_ranks(const std::vector<std::string>& args, int world,
                                 std::chrono::seconds limit, bool& failed) {
  std::uint16_t port = 0;
  {
    net::Socket s = net::listen_tcp("127.0.0.1", 0);
    port = net::local_endpoint(s).port;
  }
  const std::string session = format_session_id(random_session_id());
  const std::string out_file =
      (std::filesystem::temp_directory_path() /
       ("ruccl_tcp_bench_" + std::to_string(::getpid()) + "_" + std::to_string(port) + ".txt"))
          .string();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    const std::string w = std::to_string(world), rs = std::to_string(r);
    for (const std::string& kv :
         {"RUCCL_RANK=" + rs, "RUCCL_WORLD_SIZE=" + w, "RUCCL_LOCAL_RANK=" + rs,
          "RUCCL_LOCAL_WORLD_SIZE=" + w, std::string("RUCCL_NODE_RANK=0"),
          std::string("RUCCL_NUM_NODES=1"), std::string("RUCCL_MASTER_ADDR=127.0.0.1"),
          "RUCCL_MASTER_PORT=" + std::to_string(port), "RUCCL_SESSION_ID=" + session}) {
      env.push_back(kv);
    }
    std::vector<char*> argv, envp;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, r == 0 ? out_file.c_str() : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      std::fprintf(stderr, "tcp_collective_bench: cannot start %s: %s\n", argv[0],
                   std::strerror(rc));
      failed = true;
      break;
    }
    pids.push_back(pid);
  }
  const auto until = std::chrono::steady_clock::now() + limit;
  std::vector<bool> done(pids.size(), false);
  for (std::size_t left = pids.size(); left > 0;) {
    for (std::size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        done[r] = true;
        --left;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = true;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() >= until) {
      std::fprintf(stderr, "tcp_collective_bench: ranks still running after %lld s: killed\n",
                   static_cast<long long>(limit.count()));
      for (std::size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) {
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], nullptr, 0);
        }
      }
      failed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(out_file);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(out_file);
  return text.str();
}

/// Our ranks: `args` started `world` times by run_own_ranks, or, when `ruccl_run` names the
/// launcher, as `ruccl_run --nproc-per-node world args...` (its output: every rank's, each line
/// led by "[rank] "), killed after `limit`.
inline std::string run_our_ranks(const std::string& ruccl_run, const std::vector<std::string>& args,
                                 int world, std::chrono::seconds limit, bool& failed) {
  if (ruccl_run.empty()) return run_own_ranks(args, world, limit, failed);
  std::string cmd = "timeout " + std::to_string(limit.count()) + " '" + ruccl_run +
                    "' --nproc-per-node " + std::to_string(world);
  for (const std::string& a : args) cmd += " '" + a + "'";
  return run_command(cmd + " 2>&1");
}

inline std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

inline std::string cell(double v, int precision) {
  if (v < 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, v);
  return buf;
}

/// One table row: markdown ("| a | b |") or CSV.
inline void print_row(const std::vector<std::string>& cells, bool csv) {
  std::string line = csv ? "" : "|";
  for (std::size_t i = 0; i < cells.size(); ++i)
    line += csv ? (i ? "," : "") + cells[i] : " " + cells[i] + " |";
  std::printf("%s\n", line.c_str());
}

/// W communicators over TCP on loopback in this process (one thread per rank connects, each with
/// its own transport; shared memory between them only when `shared_memory`).
inline std::vector<Communicator> loopback_tcp_group(int world, bool shared_memory) {
  auto store = std::make_shared<InMemoryStore>();
  const SessionId session = random_session_id();
  std::vector<Communicator> comms(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      TcpTransportOptions o;
      o.listen_host = "127.0.0.1";
      o.local_ranks = world;
      if (!shared_memory) o.shared_memory = SharedMemory::Off;
      comms[static_cast<std::size_t>(r)] =
          TcpGroup::connect(store, r, world, session, Device::cpu(), {}, o);
    });
  }
  for (auto& t : threads) t.join();
  return comms;
}

}  // namespace ruccl::bench
