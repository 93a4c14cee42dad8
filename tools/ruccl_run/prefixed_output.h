#pragma once
// Whole, rank-prefixed lines from a rank's pipe to the launcher's stdout or stderr. One writer
// (the launcher's single thread) writes whole lines, so lines never interleave mid-line.
#include <cstddef>
#include <string>
#include <string_view>

#include "tensor/core/error.h"

namespace ruccl::run {

/// Writes all of `bytes` to `fd` (retrying short writes and EINTR). After a failed write (EPIPE:
/// the reader went away) the fd is given up and later writes to it are dropped.
void write_whole(int fd, std::string_view bytes);

/// Splits one rank stream into lines and writes each as "[rank] line\n".
class PrefixedStream {
 public:
  /// A line longer than this is written as several prefixed lines, cut every kMaxLine bytes, so
  /// that a rank cannot make the launcher hold an unbounded amount.
  static constexpr std::size_t kMaxLine = 64 * 1024;

  PrefixedStream(int rank, int target_fd) : prefix_(str("[", rank, "] ")), target_(target_fd) {}
  /// Takes bytes read from the pipe; writes every complete line.
  void add(std::string_view bytes);
  /// Writes a pending partial line, ended by a newline (at EOF).
  void flush_partial();

 private:
  std::string prefix_;
  int target_;
  std::string pending_;
};

}  // namespace ruccl::run
