#pragma once
// Internals shared by the socket helpers and the store server (not part of the public API).
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>

#include "collective/net/descriptor_usage.h"
#include "collective/net/socket.h"
#include "tensor/core/error.h"

namespace ruccl::net::detail {

/// "Connection refused (errno 111)"; for EMFILE and ENFILE also what holds the descriptors
/// (descriptor_usage.h): running out of them is said as such.
inline std::string errno_text(int err) {
  char buf[128];
  // GNU strerror_r returns the message (maybe not in buf); thread-safe unlike strerror.
  const char* text = strerror_r(err, buf, sizeof buf);
  if (err == EMFILE || err == ENFILE)
    return str(text, " (errno ", err, "): ", descriptor_usage(err));
  return str(text, " (errno ", err, ")");
}

/// The time left before `deadline` as a poll() timeout: whole milliseconds rounded up (so a poll
/// that times out has reached the deadline), 0 once it passed, at most INT_MAX.
inline int poll_timeout_ms(const Deadline& deadline) {
  const auto left = deadline.at() - Deadline::Clock::now();
  if (left <= Deadline::Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

/// The numeric host and port of an IPv4 or IPv6 socket address ("?" for another family).
Endpoint endpoint_of(const sockaddr_storage& addr);

}  // namespace ruccl::net::detail
