#pragma once
// Runs a call in a forked child process with a deadline and a memory cap, so a test of code that
// must return promptly fails (instead of hanging or exhausting the machine) when it regresses.
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <functional>
#include <string>

#include "optim/checkpoint/checkpoint_error.h"
#include "tensor/core/sanitizers.h"

namespace ruccl::optim::test_support {

/// How a call run by call_in_child ended.
struct ChildOutcome {
  enum class Kind { CheckpointError, OtherException, Returned, TimedOut, Died };
  Kind kind = Kind::Died;
  std::string message;  ///< what() of the exception, when one was thrown
};

inline const char* to_string(ChildOutcome::Kind kind) {
  switch (kind) {
    case ChildOutcome::Kind::CheckpointError:
      return "threw CheckpointError";
    case ChildOutcome::Kind::OtherException:
      return "threw another exception";
    case ChildOutcome::Kind::Returned:
      return "returned";
    case ChildOutcome::Kind::TimedOut:
      return "did not return in time (killed)";
    case ChildOutcome::Kind::Died:
      return "died";
  }
  return "?";
}

/// Runs `call` in a child process and reports how it ended; the child is killed after `limit`.
/// Outside sanitizer builds (whose shadow memory needs the address space) the child's address
/// space is capped at its size at fork + 1 GiB, so a call that grows memory without bound ends
/// with std::bad_alloc rather than swapping. Catch2 must not be used inside `call`.
inline ChildOutcome call_in_child(const std::function<void()>& call,
                                  std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  int fds[2];
  if (::pipe(fds) != 0) return {ChildOutcome::Kind::Died, "pipe failed"};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {ChildOutcome::Kind::Died, "fork failed"};
  }
  if (pid == 0) {
    ::close(fds[0]);
#if !RUCCL_ASAN && !RUCCL_TSAN
    std::uint64_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t cap = pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{1} << 30);
    const rlimit rl{cap, cap};
    ::setrlimit(RLIMIT_AS, &rl);
#endif
    std::string report = "R";
    try {
      call();
    } catch (const CheckpointError& e) {
      report = std::string("C") + e.what();
    } catch (const std::exception& e) {
      report = std::string("E") + e.what();
    } catch (...) {
      report = "E(not a std::exception)";
    }
    const char* p = report.data();
    std::size_t left = report.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);  // no destructors, no atexit, no stdio flush: the parent's state stays its own
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string report;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child exited
    report.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return {ChildOutcome::Kind::TimedOut, ""};
  if (report.empty()) return {ChildOutcome::Kind::Died, str("wait status ", status)};
  const std::string message = report.substr(1);
  switch (report[0]) {
    case 'C':
      return {ChildOutcome::Kind::CheckpointError, message};
    case 'E':
      return {ChildOutcome::Kind::OtherException, message};
    default:
      return {ChildOutcome::Kind::Returned, ""};
  }
}

}  // namespace ruccl::optim::test_support
