#pragma once
// What holds this process's file descriptors, for the message of a call that ran out of them
// (EMFILE, ENFILE): the limit and the open descriptors by kind, so the error says it is
// descriptor exhaustion and who holds them, not a later unrelated failure.
//
//   "out of file descriptors: 1024 open of RLIMIT_NOFILE 1024 (1003 sockets, 12 files, 9 pipes)"
#include <string>

namespace ruccl::net {

/// "out of file descriptors: N open of RLIMIT_NOFILE L (S sockets, F files, P pipes, O other)"
/// ("the system's table is full (ENFILE)" for ENFILE): read from /proc/self/fd and getrlimit.
std::string descriptor_usage(int err);

}  // namespace ruccl::net
