#pragma once
// Processes of the multi-node tests (one per node or rank): started with posix_spawn and extra
// environment variables, stdout to a file of their own, waited for with a limit, SIGKILLed by the
// destructor when still running (a hang fails the test, it never outlives it).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collective/net/socket.h"
#include "tensor/core/error.h"

extern char** environ;

namespace ruccl::testing {

/// A port free on `host` right now (bound, read, closed).
inline std::uint16_t free_port_on(const std::string& host) {
  net::Socket s = net::listen_tcp(host, 0);
  return net::local_endpoint(s).port;
}

class NodeProcess {
 public:
  NodeProcess(const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env = {}) {
    static std::atomic<int> counter{0};
    output_ = str("/tmp/ruccl_node_", ::getpid(), "_", counter++, ".txt");
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    for (const std::string& kv : extra_env) env.push_back(kv);
    std::vector<char*> argv, envp;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    const int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
  }
  ~NodeProcess() {
    if (status_ < 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::unlink(output_.c_str());
  }
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string output() const {
    std::ifstream in(output_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// Waits until the output contains `text` (false after `limit`).
  bool wait_output(const std::string& text, std::chrono::milliseconds limit) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (output().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }
  /// The exit code (128 + signal when killed by one), or -1 after `limit`.
  int wait(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    if (status_ >= 0) return status_;
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return status_;
      }
      if (std::chrono::steady_clock::now() >= until) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  /// SIGKILL now; returns when it is reaped.
  void kill9() {
    ::kill(pid_, SIGKILL);
    wait();
  }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string output_;
};

/// The lines of `text` that start with `prefix`.
inline std::vector<std::string> lines_with_prefix(const std::string& text,
                                                  const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

}  // namespace ruccl::testing
