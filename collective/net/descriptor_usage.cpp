#include "collective/net/descriptor_usage.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string_view>

#include "tensor/core/error.h"

namespace ruccl::net {

std::string descriptor_usage(int err) {
  std::size_t sockets = 0, files = 0, pipes = 0, other = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == own) continue;
      char target[PATH_MAX];
      const std::string link = std::string("/proc/self/fd/") + entry->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      const std::string_view what(target, n > 0 ? static_cast<std::size_t>(n) : 0);
      if (what.rfind("socket:", 0) == 0) {
        ++sockets;
      } else if (what.rfind("pipe:", 0) == 0) {
        ++pipes;
      } else if (what.rfind("/", 0) == 0) {
        ++files;
      } else {
        ++other;
      }
    }
    ::closedir(dir);
  }
  rlimit limit{};
  const std::string cap = ::getrlimit(RLIMIT_NOFILE, &limit) == 0
                              ? (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                                                 : std::to_string(limit.rlim_cur))
                              : std::string("?");
  return str(err == ENFILE ? "the system's file table is full (ENFILE); " : "",
             "out of file descriptors: ", sockets + files + pipes + other,
             " open of RLIMIT_NOFILE ", cap, " (", sockets, " sockets, ", files, " files, ", pipes,
             " pipes, ", other, " other)");
}

}  // namespace ruccl::net
