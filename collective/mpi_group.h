#pragma once
// MpiGroup: one rank of a group whose ranks are MPI processes (started by mpirun, or by srun
// --mpi=pmix), over MpiTransport (agreement, deadlines, failure notices; mpi_transport.h). The
// same Communicator API, agreement checks, deadlines and errors as every other group
// (docs/collectives.md, "MPI engine").
//
//   // every process of `mpirun -np 4 ./train`:
//   Communicator comm = MpiGroup::world();     // or Communicator::from_env()
//   Tensor sum = comm.all_reduce(t, ReduceOperation::Sum);
//
// MPI is initialised (MPI_THREAD_MULTIPLE) when the program has not, and finalised at exit.
#include <mpi.h>

#include "collective/communicator.h"
#include "collective/mpi/mpi_transport.h"
#include "collective/protocol/call_options.h"

namespace ruccl {

/// Which engine runs the collectives of an MPI group.
enum class MpiCollectives {
  Mpi,        ///< MpiEngine: MPI's own collectives (with its fallback; mpi_engine.h)
  Algorithms  ///< AlgorithmEngine: our algorithms over MPI point-to-point, for every collective
};

class MpiGroup {
 public:
  /// This process's rank of MPI_COMM_WORLD. Every process of the job must call it (it duplicates
  /// the communicator, within options.timeout). Throws CollectiveError: InvalidConfig (options,
  /// MPI's thread level), Timeout.
  static Communicator world(Device device = Device::cpu(), CommunicatorOptions options = {},
                            MpiTransportOptions transport = {},
                            MpiCollectives collectives = MpiCollectives::Mpi);
  /// This process's rank of `comm` (a communicator the program already has; every one of its
  /// ranks must call it). ruCCL works on duplicates: `comm` stays the program's.
  static Communicator from_comm(MPI_Comm comm, Device device = Device::cpu(),
                                CommunicatorOptions options = {},
                                MpiTransportOptions transport = {},
                                MpiCollectives collectives = MpiCollectives::Mpi);
};

}  // namespace ruccl
