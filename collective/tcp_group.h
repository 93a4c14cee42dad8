#pragma once
// TcpGroup: one rank of a group whose ranks are processes (one machine or several), connected by
// the TCP transport through a rendezvous Store. The same Communicator API, agreement checks,
// deadlines and results as InProcessGroup (docs/collectives.md, "Processes and machines").
//
//   // every process (started by ruccl-run, torchrun, srun or mpirun):
//   Communicator comm = Communicator::from_env();
//   Tensor sum = comm.all_reduce(t, ReduceOperation::Sum);
#include <functional>
#include <memory>
#include <string>

#include "collective/common/session_id.h"  // SessionId, session_id_from_seed
#include "collective/communicator.h"
#include "collective/protocol/call_options.h"
#include "collective/store/store.h"
#include "collective/transport/tcp/tcp_options.h"

namespace ruccl {

/// Makes the engine of a TCP group's ranks once the control channel is up, from the group's
/// Store: the NCCL engine (cuda/collective/nccl_group.h) passes its unique id through it.
using StoreEngineFactory =
    std::function<EngineFactory(Store& store, Transport& control, int rank, int world_size,
                                Device device, const Deadline& deadline)>;

class TcpGroup {
 public:
  /// Rank `rank` of a `world_size`-rank group that meets in `store` (every rank must use the
  /// same store, session and options). Returns once this rank is connected to every peer. The
  /// store is kept alive as long as the communicator. Throws CollectiveError: InvalidConfig
  /// (bad rank, world size or options), Timeout naming the ranks that never came, PeerLost.
  static Communicator connect(std::shared_ptr<Store> store, int rank, int world_size,
                              const SessionId& session, Device device = Device::cpu(),
                              CommunicatorOptions options = {}, TcpTransportOptions transport = {},
                              const StoreEngineFactory& engine = {});

  /// The rank of the job the environment describes (read_launch_env: ruccl-run, torchrun,
  /// Slurm or OpenMPI variables): rank 0 serves a TcpStore at the master address and port, every
  /// rank connects to it, then the mesh is built. The session id is RUCCL_SESSION_ID, else one
  /// derived from the launcher's job identity. Returns after a first barrier, so every rank
  /// knows the whole group is up.
  /// With `engine`, the ranks' collectives run on the engine it makes (over the TCP control
  /// channel, which still agrees on every call).
  static Communicator from_env(Device device = Device::cpu(), CommunicatorOptions options = {},
                               TcpTransportOptions transport = {},
                               const StoreEngineFactory& engine = {});
};

/// Whether Communicator::from_env joins an MPI job (MpiGroup::world) rather than a TCP one: this
/// build has MPI (RUCCL_WITH_MPI) and RUCCL_ENGINE=mpi, or RUCCL_ENGINE is unset and an MPI
/// launcher started the process (mpirun: OMPI_COMM_WORLD_*; srun --mpi=pmix: PMIX_RANK).
/// RUCCL_ENGINE=tcp forces TCP. Throws CollectiveError(InvalidConfig) naming a RUCCL_ENGINE that
/// is neither, or "mpi" in a build without MPI.
bool mpi_engine_from_env();
/// Registers the engine Communicator::from_env uses over TCP for RUCCL_ENGINE=`name` (the CUDA
/// layer registers "nccl": cuda/collective/nccl_group.h). An unregistered name stays an error.
void register_env_engine(const std::string& name, StoreEngineFactory engine);

}  // namespace ruccl
