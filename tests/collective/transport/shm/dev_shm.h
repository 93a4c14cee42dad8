#pragma once
// What a job left in /dev/shm (the TCP transport's shared-memory segments are named
// "ruccl-<session hex>-..." and unlinked once both sides have them open).
#include <dirent.h>

#include <string>

namespace ruccl::testing {

/// Whether /dev/shm holds a file whose name starts with `prefix`.
inline bool dev_shm_has(const std::string& prefix) {
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return false;
  bool found = false;
  while (const dirent* e = ::readdir(dir)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) found = true;
  }
  ::closedir(dir);
  return found;
}

}  // namespace ruccl::testing
