// WaitPolicy (collective/common/wait_policy.h): the phases of a wait and the measured defaults of
// the three waits that use it (in process, the process transport, MPI).
#include <catch2/catch.hpp>

#include <chrono>

#include "collective/common/wait_policy.h"

namespace ruccl {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST_CASE("wait policy spins, then yields, then sleeps", "[collective][wait]") {
  const WaitPolicy policy{microseconds(5), microseconds(100)};
  CHECK(policy.phase(nanoseconds(0)) == WaitPhase::Spin);
  CHECK(policy.phase(microseconds(5) - nanoseconds(1)) == WaitPhase::Spin);
  CHECK(policy.phase(microseconds(5)) == WaitPhase::Yield);
  CHECK(policy.phase(microseconds(105) - nanoseconds(1)) == WaitPhase::Yield);
  CHECK(policy.phase(microseconds(105)) == WaitPhase::Sleep);
  // No yield window: straight from spinning to sleeping.
  CHECK(WaitPolicy{microseconds(50), nanoseconds(0)}.phase(microseconds(50)) == WaitPhase::Sleep);
}

TEST_CASE("wait policy with forever never yields or never sleeps", "[collective][wait]") {
  const WaitPolicy spin_only{WaitPolicy::kForever, WaitPolicy::kForever};
  CHECK(spin_only.phase(std::chrono::hours(1)) == WaitPhase::Spin);
  const WaitPolicy never_sleeps{microseconds(2), WaitPolicy::kForever};
  CHECK(never_sleeps.phase(microseconds(1)) == WaitPhase::Spin);
  CHECK(never_sleeps.phase(std::chrono::hours(1)) == WaitPhase::Yield);
}

TEST_CASE("wait policy defaults follow the ranks per core, and explicit settings win",
          "[collective][wait]") {
  constexpr int kMany = 1 << 20;  // more ranks than any machine's cores
  CHECK_FALSE(WaitPolicy::oversubscribed(1));
  CHECK(WaitPolicy::oversubscribed(kMany));

  const WaitPolicy threads = WaitPolicy::in_process(1);
  CHECK(threads.spin == microseconds(5));
  CHECK(threads.yield == microseconds(100));
  const WaitPolicy crowded_threads = WaitPolicy::in_process(kMany);
  CHECK(crowded_threads.spin == microseconds(1));
  CHECK(crowded_threads.yield == microseconds(1000));

  const WaitPolicy processes = WaitPolicy::process(1);
  CHECK(processes.spin == microseconds(50));
  CHECK(processes.yield == microseconds(0));
  const WaitPolicy crowded = WaitPolicy::process(kMany);
  CHECK(crowded.spin == microseconds(2));
  CHECK(crowded.yield == microseconds(100));
  const WaitPolicy set = WaitPolicy::process(kMany, microseconds(7), microseconds(0));
  CHECK(set.spin == microseconds(7));
  CHECK(set.yield == microseconds(0));

  const WaitPolicy mpi = WaitPolicy::mpi(1, false);
  CHECK(mpi.spin == WaitPolicy::kForever);   // never yields while every rank has a core
  CHECK(mpi.yield == WaitPolicy::kForever);  // and never sleeps
  CHECK(WaitPolicy::mpi(1, true).spin == microseconds(2));  // mpirun said yield when idle
  CHECK(WaitPolicy::mpi(kMany, false).spin == microseconds(2));
  CHECK(WaitPolicy::mpi(1, false, microseconds(9)).spin == microseconds(9));
}

}  // namespace
}  // namespace ruccl
