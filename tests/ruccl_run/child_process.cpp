#include "tests/ruccl_run/child_process.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ruccl::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(121);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool ChildProcess::pump(std::chrono::milliseconds slice) {
  std::vector<pollfd> fds;
  if (out_fd_ >= 0) fds.push_back({out_fd_, POLLIN, 0});
  if (err_fd_ >= 0) fds.push_back({err_fd_, POLLIN, 0});
  if (fds.empty()) return false;
  if (::poll(fds.data(), fds.size(), static_cast<int>(slice.count())) <= 0) return true;
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    char buf[65536];
    const ssize_t n = ::read(p.fd, buf, sizeof buf);
    std::string& sink = p.fd == out_fd_ ? out_ : err_;
    if (n > 0) {
      sink.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(p.fd);
      (p.fd == out_fd_ ? out_fd_ : err_fd_) = -1;
    }
  }
  return true;
}

bool ChildProcess::read_until(
    const std::function<bool(const std::string&, const std::string&)>& done,
    std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done(out_, err_)) {
    if (std::chrono::steady_clock::now() >= end || !pump(std::chrono::milliseconds(20))) {
      return done(out_, err_);
    }
  }
  return true;
}

bool ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const bool open = pump(std::chrono::milliseconds(20));
    if (!open && waitpid(pid_, &status_, WNOHANG) == pid_) {
      reaped_ = true;
      return true;
    }
    if (!open) ::usleep(2000);  // both pipes closed, the child not yet ended
    if (std::chrono::steady_clock::now() >= end) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      return false;
    }
  }
}

int ChildProcess::exit_code() const {
  return WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : WEXITSTATUS(status_);
}

Finished run_to_end(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                    const std::vector<std::string>& env) {
  const auto start = std::chrono::steady_clock::now();
  ChildProcess child(argv, env);
  const bool ended = child.wait(timeout);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ended) {
    throw std::runtime_error("the command did not end within its deadline; its stderr:\n" +
                             child.err());
  }
  return Finished{child.exit_code(), child.out(), child.err(), seconds};
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(start, nl - start);
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

}  // namespace ruccl::testing
