#pragma once
// The simulated world as a group factory (tests/collective/group_factories.h's shape), for the
// coverage table (tests/collective/coverage_table.h) at up to 1,024 ranks.
#include <vector>

#include "collective/collective.h"
#include "collective/transport/sim/sim_world.h"

namespace ruccl::testing {

/// Ranks in a simulated world (the cluster model) that moves real bytes (Checking mode).
struct Simulated {
  static constexpr const char* kName = "simulated world, checking mode";
  static std::vector<Communicator> make(int world, CommunicatorOptions options) {
    return SimGroup::create(world, LinkModel::cluster(), SimMode::Checking, std::move(options))
        .communicators;
  }
};

}  // namespace ruccl::testing
