// RUCCL_TIMEOUT_MS: the default deadline of every communicator the user gives no timeout.
// tests/CMakeLists.txt also runs the last test case with RUCCL_TIMEOUT_MS=250 and =soon.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "collective/collective.h"
#include "collective/common/env.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace std::chrono_literals;

namespace {

EnvReader reader(std::map<std::string, std::string> vars) {
  return EnvReader([vars](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

}  // namespace

TEST_CASE("default_timeout_from reads RUCCL_TIMEOUT_MS, else 300 s", "[collective]") {
  CHECK(default_timeout_from(reader({})) == 300s);
  CHECK(default_timeout_from(reader({{"RUCCL_TIMEOUT_MS", "1500"}})) == 1500ms);
  CHECK(default_timeout_from(reader({{"RUCCL_TIMEOUT_MS", "1"}})) == 1ms);
  for (const std::string bad : {"0", "-5", "1.5", "10s", "", " 100"}) {
    INFO(bad);
    CHECK_THROWS_MATCHES(
        default_timeout_from(reader({{"RUCCL_TIMEOUT_MS", bad}})), CollectiveError,
        Catch::Matchers::Message(
            "RUCCL_TIMEOUT_MS: expected a positive number of milliseconds, got \"" + bad + "\""));
  }
}

TEST_CASE("the default deadline of every group follows RUCCL_TIMEOUT_MS", "[collective]") {
  const char* env = std::getenv("RUCCL_TIMEOUT_MS");
  if (env != nullptr && std::string(env) == "soon") {  // run by ctest with a malformed value
    const auto message = Catch::Matchers::Message(
        "RUCCL_TIMEOUT_MS: expected a positive number of milliseconds, got \"soon\"");
    CHECK_THROWS_MATCHES(default_timeout(), CollectiveError, message);
    CHECK_THROWS_MATCHES(InProcessGroup::create(2), CollectiveError, message);
    CHECK_THROWS_MATCHES(CollectiveConfig(), CollectiveError, message);
    return;
  }
  const std::chrono::milliseconds expected = env == nullptr ? 300s : 250ms;
  REQUIRE((env == nullptr || std::string(env) == "250"));  // the values tests/CMakeLists.txt sets
  CHECK(default_timeout() == expected);
  CHECK(CommunicatorOptions().timeout == expected);
  CHECK(CollectiveConfig().timeout == expected);
  CommunicatorOptions explicit_options;
  explicit_options.timeout = 7s;  // set by the user: kept
  CHECK(explicit_options.timeout == 7s);
  if (env == nullptr) return;
  // A group made with default options times out after 250 ms: rank 1 never calls (it waits,
  // bounded, until rank 0 has failed, so its communicator is not released early).
  std::atomic<bool> rank0_done{false};
  const auto start = std::chrono::steady_clock::now();
  auto out = testing::run_group(2, [&](Communicator& comm) {
    if (comm.rank() == 1) {
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!rank0_done && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(1ms);
      }
      return 0;
    }
    try {
      comm.barrier();
    } catch (...) {
      rank0_done = true;
      throw;
    }
    rank0_done = true;
    return 0;
  });
  CHECK(testing::error_kind(out[0]) == CollectiveErrorKind::Timeout);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}
