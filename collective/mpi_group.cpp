#include "collective/mpi_group.h"

#include "collective/mpi/mpi_engine.h"
#include "collective/mpi/mpi_runtime.h"

namespace ruccl {

Communicator MpiGroup::world(Device device, CommunicatorOptions options,
                             MpiTransportOptions transport, MpiCollectives collectives) {
  mpi::ensure_initialized();
  return from_comm(MPI_COMM_WORLD, device, std::move(options), std::move(transport), collectives);
}

Communicator MpiGroup::from_comm(MPI_Comm comm, Device device, CommunicatorOptions options,
                                 MpiTransportOptions transport, MpiCollectives collectives) {
  validate_communicator_options(options, "MpiGroup");
  mpi::ensure_initialized();
  int world = 0;
  mpi::check(MPI_Comm_size(comm, &world), "MpiGroup: MPI_Comm_size",
             CollectiveErrorKind::InvalidConfig);
  if (!options.rank_names.ids().empty() &&
      static_cast<int>(options.rank_names.ids().size()) != world) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str("MpiGroup: expected ", world, " rank names (one per rank) or none, got ",
            options.rank_names.ids().size()));
  }
  if (transport.names == RankNames{}) transport.names = options.rank_names;
  std::unique_ptr<MpiTransport> link = MpiTransport::create(
      comm, std::move(transport), Deadline::after(options.timeout, "MpiGroup"));
  return Communicator(std::move(link), device, std::move(options),
                      collectives == MpiCollectives::Mpi ? EngineFactory(make_mpi_engine)
                                                         : EngineFactory(make_algorithm_engine));
}

}  // namespace ruccl
