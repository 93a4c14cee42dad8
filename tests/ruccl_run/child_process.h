#pragma once
// A child process for the launcher tests: started with extra environment variables, its stdout
// and stderr captured, waited for with a deadline (then SIGKILLed, so a hang fails the test).
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ruccl::testing {

class ChildProcess {
 public:
  /// Starts argv[0] (a path) with the test's environment plus `env` ("NAME=VALUE" each).
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// Reads output until `done(out, err)` holds, the child ends, or `timeout` passes; returns
  /// whether `done` held.
  bool read_until(const std::function<bool(const std::string&, const std::string&)>& done,
                  std::chrono::milliseconds timeout);
  /// Waits for the child to end (reading its output); SIGKILLs it after `timeout` and returns
  /// false then.
  bool wait(std::chrono::milliseconds timeout);

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  /// The wait status (valid after wait() returned true).
  int status() const { return status_; }
  /// The exit code, or 128 + the signal that killed it.
  int exit_code() const;

 private:
  bool pump(std::chrono::milliseconds slice);  // false once both pipes are closed
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  int status_ = 0;
  bool reaped_ = false;
};

/// Runs argv to completion within `timeout` (the test fails when it does not end).
struct Finished {
  int exit_code;
  std::string out, err;
  double seconds;
};
Finished run_to_end(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                    const std::vector<std::string>& env = {});

/// The lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);

}  // namespace ruccl::testing
