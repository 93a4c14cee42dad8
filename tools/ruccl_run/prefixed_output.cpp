#include "tools/ruccl_run/prefixed_output.h"

#include <unistd.h>
#include <cerrno>

namespace ruccl::run {

void write_whole(int fd, std::string_view bytes) {
  static bool given_up[3] = {false, false, false};
  const bool tracked = fd >= 0 && fd < 3;
  if (tracked && given_up[fd]) return;
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (tracked) given_up[fd] = true;
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void PrefixedStream::add(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  std::size_t start = 0;  // pending_[start..] is the line being assembled
  while (true) {
    const std::size_t nl = pending_.find('\n', start);
    const std::size_t end = nl == std::string::npos ? pending_.size() : nl;
    // Pieces of kMaxLine from the line's start, whether or not its newline came yet: a long line
    // is cut at the same places however the pipe delivered it.
    while (end - start > kMaxLine) {
      out += prefix_;
      out.append(pending_, start, kMaxLine);
      out += '\n';
      start += kMaxLine;
    }
    if (nl == std::string::npos) break;
    out += prefix_;
    out.append(pending_, start, nl + 1 - start);
    start = nl + 1;
  }
  pending_.erase(0, start);
  if (!out.empty()) write_whole(target_, out);
}

void PrefixedStream::flush_partial() {
  if (pending_.empty()) return;
  write_whole(target_, prefix_ + pending_ + "\n");
  pending_.clear();
}

}  // namespace ruccl::run
