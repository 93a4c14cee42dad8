// One attempt = spawn every local rank, then one poll loop over a signalfd (SIGCHLD, SIGINT,
// SIGTERM, SIGHUP) and each rank's stdout/stderr pipes, until every rank is reaped.
#include "tools/ruccl_run/job_supervisor.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tensor/core/error.h"
#include "tools/ruccl_run/prefixed_output.h"

extern char** environ;

namespace ruccl::run {
namespace {

using Clock = std::chrono::steady_clock;

void say(const std::string& line) { write_whole(2, "ruccl-run: " + line + "\n"); }

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? str("SIG", abbrev) : str("signal ", sig);
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return str("was killed by signal ", WTERMSIG(status), " (", signal_name(WTERMSIG(status)), ")");
  return str("exited with status ", WEXITSTATUS(status));
}

int exit_code_of(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

namespace {

struct Stream {
  int fd = -1;
  PrefixedStream out;
};

struct Rank {
  int global = 0;
  pid_t pid = -1;
  bool running = false;
  std::optional<Stream> out, err;
};

// Reads what `s` has now (until EAGAIN or EOF); closes it at EOF, or when `final`.
void drain(Stream& s, bool final, std::optional<Stream>& slot) {
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.out.add(std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !final) return;
    break;  // EOF, error, or a final drain with nothing left
  }
  s.out.flush_partial();
  ::close(s.fd);
  slot.reset();
}

class Attempt {
 public:
  Attempt(const LauncherOptions& o, int restart, const SessionId& session, const JobSecret& secret,
          int sigfd)
      : o_(o), restart_(restart), session_(session), secret_(secret), sigfd_(sigfd) {}

  struct Result {
    std::optional<int> failed_rank;  // the first rank that failed, when one did
    int status = 0;                  // its wait status
    int stop_signal = 0;             // a signal the launcher got
    int spawn_error = 0;             // errno of a failed exec
  };

  Result run() {
    for (int local = 0; local < o_.nproc_per_node; ++local) {
      if (!spawn(local)) break;
    }
    loop();
    return result_;
  }

 private:
  std::vector<std::string> environment(int local) const {
    const int world = o_.nnodes * o_.nproc_per_node;
    const int rank = o_.node_rank * o_.nproc_per_node + local;
    const std::string addr = o_.master_addr.empty() ? "127.0.0.1" : o_.master_addr;
    const std::pair<const char*, std::string> ours[] = {
        {"RUCCL_RANK", std::to_string(rank)},
        {"RUCCL_WORLD_SIZE", std::to_string(world)},
        {"RUCCL_LOCAL_RANK", std::to_string(local)},
        {"RUCCL_LOCAL_WORLD_SIZE", std::to_string(o_.nproc_per_node)},
        {"RUCCL_NODE_RANK", std::to_string(o_.node_rank)},
        {"RUCCL_NUM_NODES", std::to_string(o_.nnodes)},
        {"RUCCL_MASTER_ADDR", addr},
        {"RUCCL_MASTER_PORT", std::to_string(o_.master_port)},
        {"RUCCL_SESSION_ID", session_id_to_hex(session_)},
        {"RUCCL_JOB_SECRET", job_secret_to_hex(secret_)},  // the environment only
        {"RUCCL_RESTART_COUNT", std::to_string(restart_)},
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_RANK", std::to_string(local)},
        {"LOCAL_WORLD_SIZE", std::to_string(o_.nproc_per_node)},
        {"GROUP_RANK", std::to_string(o_.node_rank)},
        {"GROUP_WORLD_SIZE", std::to_string(o_.nnodes)},
        {"MASTER_ADDR", addr},
        {"MASTER_PORT", std::to_string(o_.master_port)}};
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      bool replaced = false;
      for (const auto& [name, value] : ours) {
        replaced = replaced ||
                   (entry.size() > std::strlen(name) &&
                    entry.substr(0, std::strlen(name)) == name && entry[std::strlen(name)] == '=');
      }
      if (!replaced) env.emplace_back(entry);
    }
    for (const auto& [name, value] : ours) env.push_back(str(name, "=", value));
    return env;
  }

  // Starts local rank `local`; false (with result_.spawn_error set) when PROGRAM cannot be run.
  bool spawn(int local) {
    std::vector<std::string> env = environment(local);
    std::vector<char*> envp, argv;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = o_.command;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2], err[2], exec_status[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(exec_status, O_CLOEXEC) != 0) {
      throw Error(str("pipe: ", std::strerror(errno)));
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw Error(str("fork: ", std::strerror(errno)));
    if (pid == 0) {   // the launcher is single-threaded: any call is safe here
      setpgid(0, 0);  // its own group: the terminal's ^C reaches the launcher only, once
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed launcher leaves no rank behind
      if (getppid() != parent) _exit(127);
      const int null_fd = open("/dev/null", O_RDONLY);
      dup2(null_fd, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD})
        sigaction(sig, &dfl, nullptr);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execvpe(argv[0], argv.data(), envp.data());
      const int e = errno;
      (void)!write(exec_status[1], &e, sizeof e);
      _exit(127);
    }
    setpgid(pid, pid);
    ::close(out[1]);
    ::close(err[1]);
    ::close(exec_status[1]);
    int exec_errno = 0;
    ssize_t n;
    while ((n = ::read(exec_status[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
    }
    ::close(exec_status[0]);
    Rank r;
    r.global = o_.node_rank * o_.nproc_per_node + local;
    r.pid = pid;
    r.running = true;
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    r.out.emplace(Stream{out[0], PrefixedStream(r.global, 1)});
    r.err.emplace(Stream{err[0], PrefixedStream(r.global, 2)});
    ranks_.push_back(std::move(r));
    if (n == static_cast<ssize_t>(sizeof exec_errno)) {
      result_.spawn_error = exec_errno;
      say(str("cannot run \"", o_.command[0], "\": ", std::strerror(exec_errno)));
      signal_all(SIGKILL);
      return false;
    }
    return true;
  }

  void signal_all(int sig) {
    for (const Rank& r : ranks_) {
      if (r.running) ::kill(-r.pid, sig);
    }
  }

  void start_ending(int sig) {
    signal_all(sig);
    kill_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(o_.grace_period_s));
  }

  void reaped(Rank& r, int status) {
    r.running = false;
    if (r.out) drain(*r.out, true, r.out);
    if (r.err) drain(*r.err, true, r.err);
    const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!failed || result_.failed_rank || result_.stop_signal || result_.spawn_error) return;
    result_.failed_rank = r.global;
    result_.status = status;
    const bool others =
        std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& x) { return x.running; });
    say(str("rank ", r.global, " (pid ", r.pid, ") ", describe_status(status),
            others ? str("; ending the other ranks (SIGTERM, then SIGKILL after ",
                         o_.grace_period_s, " s)")
                   : ""));
    start_ending(SIGTERM);
  }

  void on_signals() {
    signalfd_siginfo info[16];
    const ssize_t n = ::read(sigfd_, info, sizeof info);
    for (ssize_t k = 0; k < n / static_cast<ssize_t>(sizeof info[0]); ++k) {
      const int sig = static_cast<int>(info[k].ssi_signo);
      if (sig == SIGCHLD) continue;  // reaped below, whatever the count of coalesced SIGCHLDs
      if (result_.stop_signal != 0) {
        say(str("got ", signal_name(sig), " again: SIGKILL to every rank"));
        signal_all(SIGKILL);
        kill_at_.reset();
        continue;
      }
      result_.stop_signal = sig;
      say(str("got ", signal_name(sig), ": forwarding it to every rank (SIGKILL after ",
              o_.grace_period_s, " s)"));
      start_ending(sig);
    }
    for (Rank& r : ranks_) {
      int status = 0;
      if (r.running && waitpid(r.pid, &status, WNOHANG) == r.pid) reaped(r, status);
    }
  }

  void loop() {
    while (std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; })) {
      std::vector<pollfd> fds{{sigfd_, POLLIN, 0}};
      std::vector<std::optional<Stream>*> slots;
      for (Rank& r : ranks_) {
        for (std::optional<Stream>* s : {&r.out, &r.err}) {
          if (*s) {
            fds.push_back({(*s)->fd, POLLIN, 0});
            slots.push_back(s);
          }
        }
      }
      int timeout_ms = -1;
      if (kill_at_) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(*kill_at_ - Clock::now()).count();
        timeout_ms = static_cast<int>(std::max<long long>(0, left));
      }
      const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0 && errno != EINTR) throw Error(str("poll: ", std::strerror(errno)));
      for (std::size_t k = 1; ready > 0 && k < fds.size(); ++k) {
        if (fds[k].revents != 0) drain(**slots[k - 1], false, *slots[k - 1]);
      }
      if (ready > 0 && fds[0].revents != 0) on_signals();
      if (kill_at_ && Clock::now() >= *kill_at_) {
        std::string still;
        for (const Rank& r : ranks_) {
          if (r.running) still += str(still.empty() ? "" : ", ", r.global);
        }
        say(str("rank(s) ", still, " still running after the ", o_.grace_period_s,
                " s grace period: SIGKILL"));
        signal_all(SIGKILL);
        kill_at_.reset();
      }
    }
    // Output that a rank's own children still hold open is not waited for.
    for (Rank& r : ranks_) {
      if (r.out) drain(*r.out, true, r.out);
      if (r.err) drain(*r.err, true, r.err);
    }
  }

  const LauncherOptions& o_;
  int restart_;
  SessionId session_;
  JobSecret secret_;
  int sigfd_;
  std::vector<Rank> ranks_;
  std::optional<Clock::time_point> kill_at_;
  Result result_;
};

}  // namespace

int run_job(const LauncherOptions& options) {
  // Two pipes per rank: up to --nproc-per-node 1024 needs more descriptors than the usual soft
  // limit of 1024, so take the hard limit (ranks inherit it).
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  sigset_t mask;
  sigemptyset(&mask);
  for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  const int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) throw Error(str("signalfd: ", std::strerror(errno)));
  for (int restart = 0;; ++restart) {
    // One node: a fresh id per attempt, so that nothing of an earlier attempt can join this one.
    const SessionId session = options.session_id ? *options.session_id : random_session_id();
    // The same for the secret: one the user gave (every node shares it), else a fresh one.
    const JobSecret secret = options.secret ? *options.secret : random_job_secret();
    const Attempt::Result result = Attempt(options, restart, session, secret, sigfd).run();
    if (result.stop_signal != 0) {
      ::close(sigfd);
      std::signal(result.stop_signal, SIG_DFL);
      sigprocmask(SIG_UNBLOCK, &mask, nullptr);
      ::raise(result.stop_signal);
      return 128 + result.stop_signal;
    }
    if (result.spawn_error != 0) return result.spawn_error == ENOENT ? 127 : 126;
    if (!result.failed_rank) return 0;
    const std::string why = str("rank ", *result.failed_rank, " ", describe_status(result.status));
    if (restart >= options.max_restarts) {
      if (options.max_restarts > 0) say(str("giving up after ", restart, " restart(s): ", why));
      return exit_code_of(result.status);
    }
    say(str("restarting the job (restart ", restart + 1, " of ", options.max_restarts, "): ", why));
  }
}

}  // namespace ruccl::run
