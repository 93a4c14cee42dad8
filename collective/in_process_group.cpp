#include "collective/in_process_group.h"

#include "collective/transport/in_process/in_process_transport.h"

namespace ruccl {

std::vector<Communicator> InProcessGroup::create(int world_size, std::vector<Device> devices,
                                                 CommunicatorOptions options) {
  return create(world_size, std::move(devices), std::move(options), EngineFactory{});
}

std::vector<Communicator> InProcessGroup::create(int world_size, std::vector<Device> devices,
                                                 CommunicatorOptions options,
                                                 const EngineFactory& engine) {
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
  validate_communicator_options(options, "InProcessGroup::create");
  if (devices.empty()) devices.assign(static_cast<std::size_t>(world_size), Device::cpu());
  auto hub = std::make_shared<InProcessHub>(world_size, options.rank_names);
  std::vector<Communicator> comms;
  comms.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    auto transport = std::make_unique<InProcessTransport>(hub, r);
    const Device device = devices[static_cast<std::size_t>(r)];
    if (engine) {
      comms.emplace_back(std::move(transport), device, options, engine);
    } else {
      comms.emplace_back(std::move(transport), device, options);
    }
  }
  return comms;
}

}  // namespace ruccl
