#include "cuda/collective/nccl_group.h"

#include <set>

#include "collective/in_process_group.h"
#include "cuda/collective/nccl_engine.h"
#include "cuda/collective/nccl_support.h"
#include "cuda/core/check.h"
#include "cuda/core/device.h"

namespace ruccl::cuda {

namespace {

void require_cuda(Device device, const char* op) {
  if (!device.is_cuda()) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str(op, ": expected a CUDA device for the NCCL engine, got ", device.to_string()));
  }
  require_device(op, device.index);
}

ncclUniqueId make_unique_id() {
  ncclUniqueId id;
  RUCCL_NCCL_CHECK(ncclGetUniqueId(&id));
  return id;
}

EngineFactory engine_over(std::shared_ptr<NcclComm> comm) {
  return [comm](Transport& control, Device device, const CommunicatorOptions& options) {
    return std::make_unique<NcclEngine>(control, device, options, comm);
  };
}

}  // namespace

StoreEngineFactory nccl_store_engine(Device device) {
  // `device` is the rank's (connect/from_env pass the Communicator's device).
  return [device](Store& store, Transport& control, int rank, int world_size, Device,
                  const Deadline& deadline) -> EngineFactory {
    require_cuda(device, "NcclGroup");
    const ncclUniqueId id = exchange_unique_id(store, rank, deadline, &make_unique_id);
    return engine_over(NcclComm::init_rank(world_size, id, rank, device, deadline, &control));
  };
}

Communicator NcclGroup::connect(std::shared_ptr<Store> store, int rank, int world_size,
                                const SessionId& session, Device device,
                                CommunicatorOptions options, TcpTransportOptions transport) {
  require_cuda(device, "NcclGroup::connect");
  return TcpGroup::connect(std::move(store), rank, world_size, session, device, std::move(options),
                           std::move(transport), nccl_store_engine(device));
}

Communicator NcclGroup::from_env(Device device, CommunicatorOptions options) {
  require_cuda(device, "NcclGroup::from_env");
  return TcpGroup::from_env(device, std::move(options), {}, nccl_store_engine(device));
}

std::vector<Communicator> NcclGroup::create(const std::vector<Device>& devices,
                                            CommunicatorOptions options) {
  std::set<int> seen;
  for (const Device& d : devices) {
    require_cuda(d, "NcclGroup::create");
    if (!seen.insert(d.index).second) {
      throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                            str("NcclGroup::create: expected distinct CUDA devices (NCCL refuses "
                                "two ranks on one GPU; use InProcessGroup for logical ranks "
                                "sharing one), got ",
                                d.to_string(), " twice"));
    }
  }
  if (devices.empty()) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          "NcclGroup::create: expected at least one device, got none");
  }
  const std::vector<std::shared_ptr<NcclComm>> comms =
      NcclComm::init_all(devices, Deadline::after(options.timeout, "NcclGroup::create"));
  // Rank r's engine takes rank r's communicator (the factory is called once per rank).
  auto shared = std::make_shared<std::vector<std::shared_ptr<NcclComm>>>(comms);
  EngineFactory factory = [shared](Transport& control, Device device,
                                   const CommunicatorOptions& o) {
    return std::make_unique<NcclEngine>(control, device, o,
                                        (*shared)[static_cast<std::size_t>(control.rank())]);
  };
  return InProcessGroup::create(static_cast<int>(devices.size()), devices, std::move(options),
                                factory);
}

void install_nccl_env_engine() {
  register_env_engine("nccl",
                      [](Store& store, Transport& control, int rank, int world_size, Device device,
                         const Deadline& deadline) -> EngineFactory {
                        return nccl_store_engine(device)(store, control, rank, world_size, device,
                                                         deadline);
                      });
}

}  // namespace ruccl::cuda
