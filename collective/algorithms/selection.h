#pragma once
// Algorithm selection: the one place that turns what every rank of a group shares (its options,
// its world size, its kind of transport) into the algorithm and segment size of a call. Every rank
// computes the same answer, so the choice needs no agreement of its own (the call's record
// carries it and the agreement checks it). The defaults were measured on the project's machines;
// the measurements and why each number is what it is: docs/performance-history.md.
#include <cstddef>

#include "collective/protocol/call_options.h"
#include "collective/protocol/call_record.h"
#include "collective/transport/transport_traits.h"

namespace ruccl {

/// From this many ranks up, over links that copy (TCP, shared memory), Auto runs the log-step
/// algorithms: RecursiveDoubling for messages up to options.direct_fold_all_bytes (all_reduce,
/// reduce; all_gather blocks up to that size) and for every broadcast below the ring threshold, and
/// under Determinism::PerAlgorithm HalvingDoubling for all_reduce and reduce between that and the
/// ring threshold. Below it the rules measured with 2-4 ranks stay as they were. Measured at 8
/// processes on this 2-core machine, Direct still won at 4 KiB (the log-step rounds each wait for
/// a descheduled peer) and HalvingDoubling won at 64 KiB but not at 1 MiB
/// (docs/performance.md, "Algorithms for many ranks"): so not yet at 8. 16 is the message-count
/// argument (Direct posts W - 1 messages per rank, the log-step ones log2 W rounds), not a
/// measurement; the fitted cost model is to replace it.
inline constexpr int kLogStepMinWorld = 16;

/// Whether `algorithm` can run a collective of `kind`: every one runs all_reduce and reduce
/// (Auto included); broadcast all but HalvingDoubling; all_gather Auto, Direct and
/// RecursiveDoubling.
bool algorithm_runs(OpKind kind, Algorithm algorithm);
/// Whether `algorithm` folds in the canonical linear order (all but HalvingDoubling), so its
/// results are the same bits as every other such algorithm's.
bool folds_linearly(Algorithm algorithm);

/// What Algorithm::Auto means for a collective of `kind` (AllReduce, Reduce or Broadcast) moving
/// `bytes` per rank (all_reduce / reduce: the input in its accumulation dtype; broadcast: root's
/// tensor) over links of kind `link` (Transport::traits). In process always Direct (every rank
/// reads its peers' memory in place, the fewest bytes moved); a copying transport Direct below
/// options.ring_threshold_bytes and Ring at or above (bandwidth-optimal, pipelined in segments);
/// an all_reduce or reduce of `world` >= 3 ranks uses options.ring_threshold_bytes_from_3
/// instead; links through shared memory the shared_memory_ thresholds. From kLogStepMinWorld ranks
/// up over copying links, the log-step algorithms below the ring threshold (see there).
/// AllGather: RecursiveDoubling from kLogStepMinWorld ranks over copying links for blocks up to
/// options.direct_fold_all_bytes, else Direct. Never returns Auto.
Algorithm auto_algorithm(OpKind kind, std::size_t bytes, LinkKind link,
                         const CommunicatorOptions& options, int world = 2);

/// Over a copying transport (TCP) the ring all-reduce and reduce move their chunks in segments of
/// at most this many bytes (one TCP frame): the partial a rank sends on was folded a moment ago
/// and is still in cache (docs/performance-history.md, "Ring segments over TCP").
inline constexpr std::size_t kCopyingRingSegmentBytes = std::size_t{256} << 10;
/// The cap instead when every pair of a group of 3 or more shares memory: the fold reads a segment
/// straight out of the ring slot, and a 64 KiB one is still in cache when it is folded and sent on
/// (docs/performance-history.md, "Ring segments through shared memory").
inline constexpr std::size_t kSharedMemoryRingSegmentBytes = std::size_t{64} << 10;

/// The segment size of a ring all-reduce or reduce over links of kind `link`:
/// options.segment_bytes, capped over copying links at kCopyingRingSegmentBytes, or, from world 3
/// up, at kSharedMemoryRingSegmentBytes through shared memory (2 ranks keep options.segment_bytes
/// there). Depends only on what every rank of a group shares, so every rank cuts the same segments.
std::size_t ring_segment_bytes(const CommunicatorOptions& options, int world, LinkKind link);

}  // namespace ruccl
