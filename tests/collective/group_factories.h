#pragma once
// The transports every collective test runs over. Each is a type with a kName and a make(world,
// options) building one Communicator per rank; RUCCL_GROUP_FACTORIES lists them for Catch2's
// TEMPLATE_TEST_CASE, which names each test "<sentence> - <Type>" (so names stay unique per
// transport, and CTest runs each on its own):
//
//   TEMPLATE_TEST_CASE("all_gather concatenates in rank order", "[collective]",
//                      RUCCL_GROUP_FACTORIES) {
//     auto out = run_group_with(TestType::make, 4, [](Communicator& c) { ... });
//   }
//
// A new transport is one struct here (or in its own header included here) and one name in the
// list.
#include <functional>
#include <memory>
#include <vector>

#include "collective/collective.h"
#include "collective/transport/fault/fault_injecting_transport.h"
#include "collective/transport/in_process/in_process_transport.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"

namespace ruccl::testing {

/// An in-process group whose rank r runs over a FaultInjectingTransport with plans(r) (`copying`:
/// also as a copying transport). Cut and KillRank act on the shared hub: a cut link fails the
/// next wait across it with PeerLost, a killed rank leaves the group. Options are validated like
/// InProcessGroup::create's.
inline std::vector<Communicator> in_process_group_with_faults(
    int world, CommunicatorOptions options, const std::function<FaultPlan(int rank)>& plans,
    bool copying) {
  if (world < 1) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str("in_process_group_with_faults: expected a world size >= 1, got ", world));
  }
  validate_communicator_options(options, "in_process_group_with_faults");
  auto hub = std::make_shared<InProcessHub>(world, options.rank_names);
  std::vector<Communicator> comms;
  for (int r = 0; r < world; ++r) {
    FaultHooks hooks{[hub, r] { hub->leave(r); }, [hub, r](int peer) { hub->cut_link(r, peer); }};
    comms.emplace_back(std::make_unique<FaultInjectingTransport>(
                           std::make_unique<InProcessTransport>(hub, r),
                           plans ? plans(r) : FaultPlan{}, std::move(hooks), copying),
                       Device::cpu(), options);
  }
  return comms;
}

/// Threads of one process, reading each other's memory in place.
struct InProcess {
  static constexpr const char* kName = "in-process";
  static std::vector<Communicator> make(int world, CommunicatorOptions options) {
    return InProcessGroup::create(world, {}, options);
  }
};

/// In-process, each rank wrapped in a fault-injecting transport with no faults: a pass-through,
/// which proves the wrapper forwards everything.
struct InProcessThroughFaultWrapper {
  static constexpr const char* kName = "in-process through a pass-through fault wrapper";
  static std::vector<Communicator> make(int world, CommunicatorOptions options) {
    return in_process_group_with_faults(world, options, {}, false);
  }
};

/// In-process behind the fault wrapper's copying mode: sends are copied (wait_send returns at
/// once), receives land in the caller's buffer, the link kind is Copying (Auto picks Ring for large
/// messages): the algorithms as a network transport runs them.
struct InProcessCopying {
  static constexpr const char* kName = "in-process as a copying transport";
  static std::vector<Communicator> make(int world, CommunicatorOptions options) {
    return in_process_group_with_faults(world, options, {}, true);
  }
};

/// Every transport the collective tests run over.
#define RUCCL_GROUP_FACTORIES \
  InProcess, InProcessThroughFaultWrapper, InProcessCopying, TcpLoopback, TcpSharedMemory

}  // namespace ruccl::testing
