// Running out of file descriptors is said as such (collective/net/descriptor_usage.h): the limit
// and what holds the descriptors, in the error of the call that could not get one.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <vector>

#include "collective/net/socket.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace ruccl::testing;

TEST_CASE("a listener that cannot get a descriptor names the limit and what holds them",
          "[collective][net][security]") {
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  std::vector<net::Socket> held;
  held.push_back(net::listen_tcp("127.0.0.1", 0));
  // Just above what is open now: a few more sockets and the next one fails with EMFILE.
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(held.back().fd() + 4);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::string message;
  try {
    for (int i = 0; i < 64; ++i) held.push_back(net::listen_tcp("127.0.0.1", 0));
  } catch (const CollectiveError& e) {
    // The limit back first: UBSan's check of the call on `e` reads /proc/self/maps.
    ::setrlimit(RLIMIT_NOFILE, &saved);
    message = e.what();
  }
  ::setrlimit(RLIMIT_NOFILE, &saved);
  INFO(message);
  CHECK(contains(message, "Too many open files (errno 24): out of file descriptors: "));
  CHECK(contains(message, str(" open of RLIMIT_NOFILE ", low.rlim_cur, " (")));
  CHECK(contains(message, " sockets, "));
}
