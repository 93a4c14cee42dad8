// ruccl-run: starts the local ranks of a job (see job_supervisor.h, docs/collectives.md
// "Starting a job").
#include <cstdio>
#include <exception>
#include <iostream>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collective/common/env.h"
#include "collective/common/session_id.h"
#include "tools/ruccl_run/job_supervisor.h"
#include "tools/ruccl_run/launcher_options.h"

namespace {

// A port nobody listens on now: bind port 0 on every IPv4 address and read what the kernel chose.
// Rank 0 binds it moments later; another process could take it in between (as with torchrun's
// free-port choice).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 29500;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ruccl::run;
  try {
    LauncherOptions options =
        parse_launcher_options(argc, argv, ruccl::process_env()("RUCCL_SESSION_ID"),
                               ruccl::process_env()("RUCCL_JOB_SECRET"));
    if (options.help) {
      std::cout << usage_text();
      return 0;
    }
    if (options.new_session_id) {
      std::cout << ruccl::session_id_to_hex(ruccl::random_session_id()) << "\n";
      return 0;
    }
    if (options.master_port == 0) options.master_port = options.nnodes == 1 ? free_port() : 29500;
    return run_job(options);
  } catch (const UsageError& e) {
    std::cerr << "ruccl-run: " << e.what() << "\n" << usage_text();
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ruccl-run: " << e.what() << "\n";
    return 1;
  }
}
