#pragma once
// InProcessGroup: a group whose ranks are threads of one process.
#include <vector>

#include "collective/communicator.h"
#include "collective/protocol/call_options.h"
#include "tensor/core/device.h"

namespace ruccl {

/// Makes in-process groups. Ranks exchange data through shared memory (zero copy where the
/// algorithm allows) and wait by spinning briefly, then blocking.
class InProcessGroup {
 public:
  /// One Communicator per rank: element r is rank r; give each to its own thread.
  /// `devices`: the device of each rank (size world_size), or empty for all CPU.
  /// Throws CollectiveError(InvalidConfig) when world_size < 1, devices has the wrong size or the
  /// options are invalid (validate_communicator_options: tree_arity < 2, timeout <= 0,
  /// segment_bytes not a positive multiple of 64, ...).
  ///
  ///   std::vector<Communicator> comms = InProcessGroup::create(4);
  static std::vector<Communicator> create(int world_size, std::vector<Device> devices = {},
                                          CommunicatorOptions options = {});
  /// The same with the engine `engine` makes for each rank (NCCL's: cuda/collective/nccl_group.h).
  static std::vector<Communicator> create(int world_size, std::vector<Device> devices,
                                          CommunicatorOptions options, const EngineFactory& engine);
};

}  // namespace ruccl
