// launch_probe: a rank program for the ruccl-run tests. It runs its arguments as actions, in order:
//   env                  print "env NAME=VALUE" for each launch variable that is set
//   read-env             print read_launch_env()'s result as "launch rank=.. world=.. ..."
//   print TEXT / eprint TEXT   a line on stdout / stderr (one write)
//   partial TEXT         TEXT on stdout without a newline
//   chunked N LEN / echunked N LEN   N lines "RANK:K:" + LEN letters on stdout / stderr, each
//                        written in 7-byte pieces (to provoke interleaving)
//   pid                  print "pid PID"
//   sleep MS / exit CODE / raise SIGNUM / ignore SIGNUM
//   trap SIGNUM CODE     on SIGNUM print "got SIGNUM" and exit with CODE
//   touch PATH / wait-file PATH   create PATH / wait (up to 30 s) until PATH exists
//   if-rank R / if-restart N   run the next action only on rank R / in restart N
//   join                 Communicator::from_env(), then an all_reduce of [rank + 1, 0.5]: prints
//                        "joined sum=A,B" (or "join-error <message>" on stderr, exit 8); the
//                        communicator stays up for the actions that follow
//   hier                 like join, with Determinism::PerAlgorithm, then a HostHierarchy by node
//                        rank and its all_reduce of I64 [rank + 1, 2^40 + rank] and F32
//                        [sin(rank + k) / 3, k < 5]: prints "hier hosts=H host_size=S leader=L
//                        ints=A,B f32=X,..." (X: each float's bits in hex); "hier-error <message>"
//                        on stderr, exit 8
//   hier-time            after hier: for 4 KiB, 64 KiB, 1 MiB and 16 MiB of F32, the median of
//                        15 timed calls (after 3 warm-up ones) of the flat all_reduce and the
//                        hierarchical one: prints "hier-time bytes=N flat_us=F hier_us=H" on rank 0
//   barrier              a barrier on it: prints "barrier"
//   sockets              print "sockets N": the sockets this process holds open (/proc/self/fd)
//   reduce-until-error   all_reduces on it until one fails: prints "lost ms=M kind=K calls=N" on
//                        stderr (M: how long the failing call waited, K: its error kind) and
//                        exits 8
//   leave                ends it (every rank must leave)
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <unistd.h>

#include "collective/common/collective_error.h"
#include "collective/communicator.h"
#include "collective/host_hierarchy.h"
#include "collective/launch/launch_env.h"

namespace {

void put(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) std::_Exit(99);
    done += static_cast<std::size_t>(n);
  }
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

/// The sockets this process holds open (links "socket:[inode]" in /proc/self/fd).
std::size_t open_sockets() {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (std::filesystem::read_symlink(entry.path(), error).string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

volatile sig_atomic_t trap_code = 0;
char trap_line[64];
int trapped = 0;                                // the signal `trap` set, or 0
std::optional<ruccl::Communicator> joined;      // `join`'s, until `leave`
std::optional<ruccl::HostHierarchy> hierarchy;  // `hier`'s, until `leave`

// The median of 15 timed calls of f (after 3 warm-up ones, a barrier before each), in µs.
template <typename F>
double median_us(F&& f) {
  std::vector<double> us;
  for (int i = 0; i < 18; ++i) {
    joined->barrier();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double t =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 3) us.push_back(t);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

void on_trap(int) {
  (void)!::write(1, trap_line, std::strlen(trap_line));
  std::_Exit(trap_code);
}

void chunked(int fd, int rank, int lines, int len) {
  for (int k = 0; k < lines; ++k) {
    const std::string line =
        std::to_string(rank) + ":" + std::to_string(k) + ":" +
        std::string(static_cast<std::size_t>(len), static_cast<char>('a' + rank % 26)) + "\n";
    for (std::size_t at = 0; at < line.size(); at += 7) {
      put(fd, line.substr(at, 7));
      sched_yield();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = env_int("RUCCL_RANK");
  bool run_next = true;
  for (int i = 1; i < argc; ++i) {
    const std::string action = argv[i];
    const auto arg = [&]() -> std::string {
      if (i + 1 >= argc) {
        put(2, "launch_probe: " + action + " needs an argument\n");
        std::_Exit(98);
      }
      return argv[++i];
    };
    if (action == "if-rank") {
      const int wanted = std::stoi(arg());  // consumed whether or not it runs
      run_next = run_next && wanted == rank;
      continue;
    }
    if (action == "if-restart") {
      const int wanted = std::stoi(arg());
      run_next = run_next && wanted == env_int("RUCCL_RESTART_COUNT");
      continue;
    }
    const bool run = run_next;
    run_next = true;
    if (action == "env") {
      if (!run) continue;
      for (const char* name :
           {"RUCCL_RANK", "RUCCL_WORLD_SIZE", "RUCCL_LOCAL_RANK", "RUCCL_LOCAL_WORLD_SIZE",
            "RUCCL_NODE_RANK", "RUCCL_NUM_NODES", "RUCCL_MASTER_ADDR", "RUCCL_MASTER_PORT",
            "RUCCL_SESSION_ID", "RUCCL_RESTART_COUNT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
            "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
        if (const char* v = std::getenv(name)) put(1, std::string("env ") + name + "=" + v + "\n");
      }
    } else if (action == "read-env") {
      if (!run) continue;
      try {
        const ruccl::LaunchEnv job = ruccl::read_launch_env();
        put(1,
            "launch rank=" + std::to_string(job.rank) + " world=" + std::to_string(job.world_size) +
                " local=" + std::to_string(job.local_rank) + " local_world=" +
                std::to_string(job.local_world_size) + " node=" + std::to_string(job.node_rank) +
                " nodes=" + std::to_string(job.num_nodes) + " addr=" + job.master_addr +
                " port=" + std::to_string(job.master_port) + " session=" +
                (job.session_id ? ruccl::format_session_id(*job.session_id) : "none") +
                " restart=" + std::to_string(job.restart_count) + " source=" + job.source + "\n");
      } catch (const ruccl::CollectiveError& e) {
        put(2, std::string("launch-error ") + e.what() + "\n");
        return 9;
      }
    } else if (action == "join") {
      if (!run) continue;
      try {
        joined.emplace(ruccl::Communicator::from_env());
        const ruccl::Tensor t =
            ruccl::Tensor::from_vector<double>({joined->rank() + 1.0, 0.5}, ruccl::Shape{2});
        const auto v = joined->all_reduce(t, ruccl::ReduceOperation::Sum).to_vector<double>();
        std::ostringstream line;
        line << "joined sum=" << v[0] << "," << v[1] << "\n";
        put(1, line.str());
      } catch (const ruccl::Error& e) {
        put(2, std::string("join-error ") + e.what() + "\n");
        return 8;
      }
    } else if (action == "hier") {
      if (!run) continue;
      try {
        ruccl::CommunicatorOptions options;
        options.determinism = ruccl::Determinism::PerAlgorithm;
        joined.emplace(ruccl::Communicator::from_env(ruccl::Device::cpu(), options));
        hierarchy.emplace(*joined, ruccl::read_launch_env().node_rank);
        ruccl::HostHierarchy& h = *hierarchy;
        const std::int64_t r = joined->rank();
        const auto ints = h.all_reduce(ruccl::Tensor::from_vector<std::int64_t>(
                                           {r + 1, (std::int64_t{1} << 40) + r}, ruccl::Shape{2}))
                              .to_vector<std::int64_t>();
        std::vector<float> f;
        for (int k = 0; k < 5; ++k) f.push_back(std::sin(static_cast<float>(r + k)) / 3.0f);
        const auto sums =
            h.all_reduce(ruccl::Tensor::from_vector<float>(f, ruccl::Shape{5})).to_vector<float>();
        std::ostringstream line;
        line << "hier hosts=" << h.num_hosts() << " host_size=" << h.host().world_size()
             << " leader=" << h.is_leader() << " ints=" << ints[0] << "," << ints[1] << " f32=";
        for (std::size_t k = 0; k < sums.size(); ++k) {
          line << (k ? "," : "") << std::hex << std::bit_cast<std::uint32_t>(sums[k]) << std::dec;
        }
        put(1, line.str() + "\n");
      } catch (const ruccl::Error& e) {
        put(2, std::string("hier-error ") + e.what() + "\n");
        return 8;
      }
    } else if (action == "hier-time") {
      if (!run) continue;
      for (std::int64_t bytes : {4096, 65536, 1 << 20, 16 << 20}) {
        const ruccl::Tensor t = ruccl::Tensor::ones({bytes / 4});
        const double flat = median_us([&] { joined->all_reduce(t); });
        const double hier = median_us([&] { hierarchy->all_reduce(t); });
        if (rank == 0) {
          std::ostringstream line;
          line << "hier-time bytes=" << bytes << " flat_us=" << flat << " hier_us=" << hier << "\n";
          put(1, line.str());
        }
      }
    } else if (action == "barrier") {
      if (!run) continue;
      joined->barrier();
      put(1, "barrier\n");
    } else if (action == "reduce-until-error") {
      if (!run) continue;
      const ruccl::Tensor t = ruccl::Tensor::ones({16});
      for (long calls = 0;; ++calls) {
        const auto start = std::chrono::steady_clock::now();
        try {
          joined->all_reduce(t, ruccl::ReduceOperation::Sum);
        } catch (const ruccl::CollectiveError& e) {
          const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
          put(2, "lost ms=" + std::to_string(ms) +
                     " kind=" + std::string(ruccl::collective_error_kind_name(e.kind())) +
                     " calls=" + std::to_string(calls) + "\n");
          return 8;
        }
      }
    } else if (action == "sockets") {
      if (run) put(1, "sockets " + std::to_string(open_sockets()) + "\n");
    } else if (action == "leave") {
      if (run) {
        hierarchy.reset();
        joined.reset();
      }
    } else if (action == "print" || action == "eprint" || action == "partial") {
      const std::string text = arg();
      if (run) put(action == "eprint" ? 2 : 1, action == "partial" ? text : text + "\n");
    } else if (action == "chunked" || action == "echunked") {
      const int lines = std::stoi(arg());
      const int len = std::stoi(arg());
      if (run) chunked(action == "echunked" ? 2 : 1, rank, lines, len);
    } else if (action == "touch") {
      const std::string path = arg();
      if (run) std::fclose(std::fopen(path.c_str(), "w"));
    } else if (action == "wait-file") {
      const std::string path = arg();
      for (int tries = 0; run && tries < 3000 && ::access(path.c_str(), F_OK) != 0; ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } else if (action == "pid") {
      if (run) put(1, "pid " + std::to_string(::getpid()) + "\n");
    } else if (action == "sleep") {
      // A trapped signal is taken synchronously while sleeping (blocked, then sigtimedwait in
      // 10 ms slices), not by its handler: ThreadSanitizer's runtime runs a handler only at
      // points of its choosing, and twice in CI's TSan phase a trapped signal (a SIGTERM during
      // one 60 s sleep, later a SIGHUP during 10 ms sleep_for slices) waited out ruccl-run's
      // grace period.
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stoi(arg()));
      sigset_t set;
      sigemptyset(&set);
      if (trapped != 0) sigaddset(&set, trapped);
      sigprocmask(SIG_BLOCK, &set, nullptr);
      const timespec slice{0, 10'000'000};
      while (run && std::chrono::steady_clock::now() < until) {
        if (trapped == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        } else if (sigtimedwait(&set, nullptr, &slice) == trapped) {
          on_trap(trapped);
        }
      }
      sigprocmask(SIG_UNBLOCK, &set, nullptr);
    } else if (action == "exit") {
      const int code = std::stoi(arg());
      if (run) return code;
    } else if (action == "raise") {
      const int sig = std::stoi(arg());
      if (run) std::raise(sig);
    } else if (action == "ignore") {
      const int sig = std::stoi(arg());
      if (run) std::signal(sig, SIG_IGN);
    } else if (action == "trap") {
      const int sig = std::stoi(arg());
      const int code = std::stoi(arg());
      if (run) {
        std::snprintf(trap_line, sizeof trap_line, "got %d\n", sig);
        trap_code = code;
        trapped = sig;
        std::signal(sig, on_trap);
      }
    } else {
      put(2, "launch_probe: unknown action " + action + "\n");
      return 97;
    }
  }
  return 0;
}
