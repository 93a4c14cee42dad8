#include "collective/transport/peer_path.h"

#include <algorithm>

namespace ruccl {

CollectiveError path_kind_mismatch(const RankNames& names, int rank, const PathReceive& r,
                                   bool got_record) {
  // A peer in a collective while this rank is in a point-to-point call, or the other way round.
  return CollectiveError(
      CollectiveErrorKind::CollectiveKindMismatch,
      str(names.name(rank), " expected ",
          r.record ? "the agreement record of a collective" : "a message of a send or collective",
          " from ", names.name(r.peer), ", got ",
          got_record ? "the record of a collective" : "a message", ": the calls can never match"),
      {std::min(rank, r.peer), std::max(rank, r.peer)});
}

CollectiveError path_message_mismatch(const RankNames& names, int rank, const PathReceive& r,
                                      std::uint64_t tag, std::uint64_t nbytes) {
  return CollectiveError(
      CollectiveErrorKind::CollectiveKindMismatch,
      str(names.name(rank), " expected message tag ", r.tag, " (", r.nbytes, " bytes) from ",
          names.name(r.peer), ", got tag ", tag, " (", nbytes, " bytes)"),
      {std::min(rank, r.peer), std::max(rank, r.peer)});
}

}  // namespace ruccl
