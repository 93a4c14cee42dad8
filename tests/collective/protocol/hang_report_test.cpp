// The hang report: a deadline that expires says which call number every rank reached and which
// ranks are missing, on every transport, in the error every rank raises.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace std::chrono_literals;

TEMPLATE_TEST_CASE("A timeout names the call number every rank reached and the missing ranks",
                   "[collective][trace]", RUCCL_GROUP_FACTORIES) {
  const Tensor one = Tensor::from_vector<float>({1});
  auto out = run_group_with(
      TestType::make, 4,
      [&](Communicator& comm) {
        comm.all_reduce(one);  // call #1 on every rank
        if (comm.rank() == 2) {
          std::this_thread::sleep_for(400ms);  // stuck in its own work: never reaches #2 in time
          comm.barrier();
          return;
        }
        comm.all_gather(one, CallOptions().with_timeout(100ms));  // call #2
      },
      short_timeout(10s));
  const std::string report =
      "calls reached: rank(s) [0, 1, 3] at #2, rank(s) [2] at #1 (missing from #2: rank(s) [2])";
  for (int r : {0, 1, 3}) {
    const auto& o = out[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.message());
    REQUIRE(error_kind(o) == CollectiveErrorKind::Timeout);
    REQUIRE(error_ranks(o) == std::vector<int>{2});
    REQUIRE_THAT(o.message(), Catch::StartsWith("all_gather (call #2): rank "));
    REQUIRE_THAT(o.message(), Catch::EndsWith(report));
  }
  INFO("rank 2: " << out[2].message());
  REQUIRE(error_kind(out[2]) == CollectiveErrorKind::Aborted);
  REQUIRE_THAT(out[2].message(), Catch::Contains(report));
}

TEMPLATE_TEST_CASE("A timeout of a rank that is ahead reports the ranks still on earlier calls",
                   "[collective][trace]", RUCCL_GROUP_FACTORIES) {
  // Rank 0 waits at call #3; ranks 1 and 2 stopped after #2; nobody is missing a record of #2.
  auto out = run_group_with(
      TestType::make, 3,
      [&](Communicator& comm) {
        comm.barrier();
        comm.barrier();
        if (comm.rank() != 0) {
          std::this_thread::sleep_for(400ms);
          comm.barrier();
          return;
        }
        comm.broadcast(Tensor::from_vector<float>({1, 2}), 0, CallOptions().with_timeout(100ms));
      },
      short_timeout(10s));
  INFO("rank 0: " << out[0].message());
  REQUIRE(error_kind(out[0]) == CollectiveErrorKind::Timeout);
  REQUIRE(error_ranks(out[0]) == std::vector<int>{1, 2});
  REQUIRE_THAT(out[0].message(),
               Catch::EndsWith("calls reached: rank(s) [0] at #3, rank(s) [1, 2] at #2 (missing "
                               "from #3: rank(s) [1, 2])"));
}
