#pragma once
// SimGroup: a group whose ranks are threads of this process in a simulated world: a virtual clock
// per rank, messages costed by a LinkModel (latency, bandwidth and fold cost per link kind; a NIC
// shared by the ranks of a host; ranks per host, hosts per switch), one rank running at a time. The
// collectives are the real ones (the Communicator core and our algorithms over SimTransport), so
// 1,024 ranks run in seconds on two cores. docs/collectives.md, "The simulated world".
//
//   SimGroup group = SimGroup::create(1024, LinkModel::cluster());
//   // rank r's thread: group.communicators[r].all_reduce(t); then group.clock(r) is its time.
#include <memory>
#include <vector>

#include "collective/communicator.h"
#include "collective/protocol/call_options.h"
#include "collective/transport/sim/link_model.h"

namespace ruccl {

class SimWorld;

/// A simulated group: one Communicator per rank (element r is rank r; give each to its own
/// thread, as for InProcessGroup) and the world's virtual clocks.
struct SimGroup {
  std::vector<Communicator> communicators;
  std::shared_ptr<SimWorld> world;

  /// Throws CollectiveError(InvalidConfig) when world_size < 1, the model has no ranks per host
  /// or hosts per switch, a latency or bandwidth is not positive, or the options are invalid.
  static SimGroup create(int world_size, const LinkModel& model, SimMode mode,
                         CommunicatorOptions options = {});
  /// Rank r's virtual clock in seconds (what its calls cost so far in the model).
  double clock(int rank) const;
};

}  // namespace ruccl
