#include "collective/in_process_group.h"

#include "collective/transport/in_process_transport.h"

namespace ruccl {

std::vector<Communicator> InProcessGroup::create(int world_size, std::vector<Device> devices,
                                                 CommunicatorOptions options) {
  auto invalid = [](const std::string& message) {
    return CollectiveError(CollectiveErrorKind::InvalidConfig,
                           str("InProcessGroup::create: ", message));
  };
  if (world_size < 1) throw invalid(str("expected a world size >= 1, got ", world_size));
  if (!devices.empty() && static_cast<int>(devices.size()) != world_size) {
    throw invalid(
        str("expected ", world_size, " devices (one per rank) or none, got ", devices.size()));
  }
  if (!options.rank_names.ids().empty() &&
      static_cast<int>(options.rank_names.ids().size()) != world_size) {
    throw invalid(str("expected ", world_size, " rank names (one per rank) or none, got ",
                      options.rank_names.ids().size()));
  }
  if (options.tree_arity < 2)
    throw invalid(str("expected tree_arity >= 2, got ", options.tree_arity));
  for (const Algorithm a :
       {options.all_reduce_algorithm, options.reduce_algorithm, options.broadcast_algorithm}) {
    if (algorithm_name(a) == nullptr) throw invalid(invalid_algorithm_message(a));
  }
  if (options.timeout.count() <= 0) {
    throw invalid(str("expected a positive timeout, got ", options.timeout.count(), " ms"));
  }
  if (devices.empty()) devices.assign(static_cast<std::size_t>(world_size), Device::cpu());
  auto hub = std::make_shared<InProcessHub>(world_size, options.rank_names);
  std::vector<Communicator> comms;
  comms.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    comms.emplace_back(std::make_unique<InProcessTransport>(hub, r),
                       devices[static_cast<std::size_t>(r)], options);
  }
  return comms;
}

}  // namespace ruccl
