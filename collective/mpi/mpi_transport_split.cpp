// MpiTransport::split_natively: a group split from an MPI group is an MPI communicator of its own
// (MPI_Comm_split), with an MpiTransport over it (Communicator::split, docs/collectives.md).
#include <vector>

#include "collective/mpi/mpi_runtime.h"
#include "collective/mpi/mpi_transport.h"

namespace ruccl {

std::unique_ptr<Transport> MpiTransport::split_natively(int color, int key,
                                                        const Deadline& deadline) {
  MPI_Comm sub = MPI_COMM_NULL;
  mpi::check(MPI_Comm_split(coll_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return nullptr;
  // The group's ranks named as this group names them (its parent ranks).
  int size = 0;
  mpi::check(MPI_Comm_size(sub, &size), "MPI_Comm_size");
  std::vector<int> group_ranks(static_cast<std::size_t>(size));
  std::vector<int> parent_ranks(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) group_ranks[static_cast<std::size_t>(i)] = i;
  MPI_Group sub_group = MPI_GROUP_NULL;
  MPI_Group parent_group = MPI_GROUP_NULL;
  mpi::check(MPI_Comm_group(sub, &sub_group), "MPI_Comm_group");
  mpi::check(MPI_Comm_group(coll_, &parent_group), "MPI_Comm_group");
  mpi::check(MPI_Group_translate_ranks(sub_group, size, group_ranks.data(), parent_group,
                                       parent_ranks.data()),
             "MPI_Group_translate_ranks");
  MPI_Group_free(&sub_group);
  MPI_Group_free(&parent_group);
  MpiTransportOptions options = options_;
  std::vector<std::uint64_t> ids;
  for (int p : parent_ranks) {
    ids.push_back(options_.names.ids().empty() ? static_cast<std::uint64_t>(p)
                                               : options_.names.ids()[static_cast<std::size_t>(p)]);
  }
  options.names = RankNames(options_.names.noun(), std::move(ids));
  std::unique_ptr<MpiTransport> group = create(sub, std::move(options), deadline);
  MPI_Comm_free(&sub);  // create worked on duplicates
  return group;
}

}  // namespace ruccl
