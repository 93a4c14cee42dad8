#include "collective/sim_group.h"

#include "collective/transport/sim/sim_transport.h"

namespace ruccl {

namespace {

void validate_model(const LinkModel& m) {
  auto invalid = [](const std::string& message) {
    return CollectiveError(CollectiveErrorKind::InvalidConfig, str("SimGroup::create: ", message));
  };
  if (m.ranks_per_host < 1 || m.hosts_per_switch < 1) {
    throw invalid(str("expected at least 1 rank per host and 1 host per switch, got ",
                      m.ranks_per_host, " and ", m.hosts_per_switch));
  }
  for (const SimLink* l : {&m.in_host, &m.in_switch, &m.across_switches}) {
    if (!(l->alpha_s >= 0) || !(l->bytes_per_s > 0)) {
      throw invalid(str("expected a latency >= 0 and a bandwidth > 0 for every link kind, got ",
                        l->alpha_s, " s and ", l->bytes_per_s, " bytes/s"));
    }
  }
  if (m.cores_per_host < 0) {
    throw invalid(str("expected cores per host >= 0 (0: a core per rank), got ", m.cores_per_host));
  }
  if (!(m.nic_bytes_per_s > 0) || !(m.fold_s_per_byte >= 0) || !(m.message_overhead_s >= 0)) {
    throw invalid(str("expected a NIC bandwidth > 0, a fold cost >= 0 and an overhead >= 0, got ",
                      m.nic_bytes_per_s, ", ", m.fold_s_per_byte, " and ", m.message_overhead_s));
  }
}

}  // namespace

SimGroup SimGroup::create(int world_size, const LinkModel& model, SimMode mode,
                          CommunicatorOptions options) {
  if (world_size < 1) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("SimGroup::create: expected a world size >= 1, got ", world_size));
  }
  validate_model(model);
  validate_communicator_options(options, "SimGroup::create");
  SimGroup group;
  group.world = std::make_shared<SimWorld>(world_size, model, mode, options.rank_names);
  group.communicators.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    group.communicators.emplace_back(std::make_unique<SimTransport>(group.world, r), Device::cpu(),
                                     options);
  }
  return group;
}

double SimGroup::clock(int rank) const { return world->clock(rank); }

}  // namespace ruccl
