// Communicator::engine_name: what moves a group's bytes, by the group's transport (a job's first
// line prints it; tests/slurm/slurm_jobs.sh checks which engine a launcher's job ran over).
#include <catch2/catch.hpp>

#include "collective/in_process_group.h"
#include "tests/collective/group_factories.h"
#include "tests/collective/tcp_loopback.h"

namespace ruccl {
namespace {

TEST_CASE("communicator names the engine of its group's transport", "[collective][engine]") {
  for (const Communicator& comm : InProcessGroup::create(2)) {
    CHECK(comm.engine_name() == "algorithms in process");
  }
  for (const Communicator& comm : testing::make_tcp_loopback_group(2)) {
    CHECK(comm.engine_name() == "algorithms over tcp");
  }
  // A transport of another kind (here one that wraps the in-process one) is not taken for either.
  for (const Communicator& comm : testing::in_process_group_with_faults(2, {}, {}, false)) {
    CHECK(comm.engine_name() == "algorithms over a custom transport");
  }
  CHECK_THROWS_AS(Communicator().engine_name(), CollectiveError);
}

}  // namespace
}  // namespace ruccl
