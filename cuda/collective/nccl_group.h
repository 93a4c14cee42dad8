#pragma once
// NcclGroup: groups whose collectives run on NCCL (NcclEngine), one rank per GPU.
//
//   // every process, one GPU each (ruccl-run / torchrun / srun with RUCCL_ENGINE=nccl):
//   Communicator comm = Communicator::from_env(Device::cuda(local_rank));
//   // or explicitly, over a Store all ranks share:
//   Communicator comm = NcclGroup::connect(store, rank, world, session, Device::cuda(local_rank));
//   // one process driving several GPUs (one thread per rank):
//   std::vector<Communicator> comms = NcclGroup::create({Device::cuda(0), Device::cuda(1)});
//
// The control channel (agreement on every call, failure fan-out) is TCP between processes and the
// in-process hub within one; NCCL moves the bytes. NCCL refuses two ranks of one communicator on
// the same GPU: several logical ranks on one GPU use an InProcessGroup (device to device, our
// algorithms: cuda/collective/device_engine.h).
#include <memory>
#include <vector>

#include "collective/tcp_group.h"

namespace ruccl::cuda {

class NcclGroup {
 public:
  /// Rank `rank` of `world_size` on `device` (a CUDA device of this machine), meeting in `store`:
  /// TcpGroup::connect for the control channel, then rank 0's ncclUniqueId through the store
  /// (exchange_unique_id) and ncclCommInitRankConfig. Throws CollectiveError (InvalidConfig for
  /// a CPU device; Timeout; PeerLost) or DeviceError without a GPU.
  static Communicator connect(std::shared_ptr<Store> store, int rank, int world_size,
                              const SessionId& session, Device device,
                              CommunicatorOptions options = {}, TcpTransportOptions transport = {});
  /// This process's rank of the job the environment describes (TcpGroup::from_env), on NCCL.
  static Communicator from_env(Device device, CommunicatorOptions options = {});
  /// One Communicator per device (rank i on devices[i], distinct CUDA devices), for one thread
  /// each; the communicators are initialised together (one NCCL group call).
  static std::vector<Communicator> create(const std::vector<Device>& devices,
                                          CommunicatorOptions options = {});
};

/// The StoreEngineFactory of the NCCL engine (for TcpGroup::connect / from_env).
StoreEngineFactory nccl_store_engine(Device device);

/// Registers "nccl" for Communicator::from_env (RUCCL_ENGINE=nccl). install_collectives() calls it.
void install_nccl_env_engine();

}  // namespace ruccl::cuda
