#pragma once
// The hang report: when a collective's deadline expires, which call number every rank reached
// and which ranks are missing -- the question every hung job asks first. Transports append it to
// their Timeout message (so every rank raises it, and RUCCL_DEBUG=WARN logs it):
//
//   all_reduce (call #5): rank 0 timed out after 100 ms waiting for the call from rank(s) [2]
//   that never arrived; calls reached: rank(s) [0, 1] at #5, rank(s) [2] at #4 (missing from #5:
//   rank(s) [2])
#include <cstdint>
#include <span>
#include <string>

#include "collective/common/rank_names.h"

namespace ruccl {

/// The call number a rank is not known to have started: over TCP a peer from which no record
/// came yet.
inline constexpr std::uint64_t kCallNotSeen = 0;

/// "calls reached: rank(s) [0, 1] at #5, rank(s) [2] at #4 (missing from #5: rank(s) [2])".
/// `reached[r]`: the newest collective call number rank r is known to have started (kCallNotSeen:
/// none yet, printed "none"); `seq`: the call that timed out. Ranks are grouped by call number,
/// newest first; "missing" lists the ranks below `seq` (none: the clause is left out).
std::string describe_calls_reached(std::span<const std::uint64_t> reached, std::uint64_t seq,
                                   const RankNames& names);

/// The hang report of a transport that knows only the records it received (TCP, MPI): `seen[r]`
/// is the newest call whose record came from rank r; while this rank waits for the records of
/// call `agreeing_seq`, every peer not in `absent` sent its record of that call. Returns "; "
/// and describe_calls_reached's text for a collective's deadline, "" for a point-to-point one
/// (seq == 0: no call numbers; a group call passes deadline.transport_seq(), 0 on its parent).
std::string calls_reached_from_records(std::span<const std::uint64_t> seen,
                                       std::uint64_t agreeing_seq, std::span<const int> absent,
                                       std::uint64_t seq, const RankNames& names);

}  // namespace ruccl
