#include "collective/algorithms/selection.h"

#include <algorithm>

namespace ruccl {

bool algorithm_runs(OpKind kind, Algorithm algorithm) {
  switch (kind) {
    case OpKind::Broadcast:
    case OpKind::BroadcastFromSender:
      return algorithm != Algorithm::HalvingDoubling;
    case OpKind::AllGather:
      return algorithm == Algorithm::Auto || algorithm == Algorithm::Direct ||
             algorithm == Algorithm::RecursiveDoubling;
    default:
      return true;
  }
}

bool folds_linearly(Algorithm algorithm) { return algorithm != Algorithm::HalvingDoubling; }

Algorithm auto_algorithm(OpKind kind, std::size_t bytes, LinkKind link,
                         const CommunicatorOptions& options, int world) {
  if (link == LinkKind::InProcess) return Algorithm::Direct;
  const bool many = world >= kLogStepMinWorld;
  const bool small = bytes <= options.direct_fold_all_bytes;
  if (kind == OpKind::AllGather) {
    return many && small ? Algorithm::RecursiveDoubling : Algorithm::Direct;
  }
  const bool shared_memory = link == LinkKind::SharedMemory;
  const bool from_3 = (kind == OpKind::AllReduce || kind == OpKind::Reduce) && world >= 3;
  const std::size_t threshold =
      shared_memory ? (from_3 ? options.shared_memory_ring_threshold_bytes_from_3
                              : options.shared_memory_ring_threshold_bytes)
                    : (from_3 ? options.ring_threshold_bytes_from_3 : options.ring_threshold_bytes);
  if (bytes >= threshold) return Algorithm::Ring;
  if (!many) return Algorithm::Direct;
  const bool reduces = kind == OpKind::AllReduce || kind == OpKind::Reduce;
  // A binomial broadcast's critical path moves log2 W copies, the direct one W - 1 from root.
  if (small || !reduces) return Algorithm::RecursiveDoubling;
  return options.determinism == Determinism::PerAlgorithm ? Algorithm::HalvingDoubling
                                                          : Algorithm::Direct;
}

std::size_t ring_segment_bytes(const CommunicatorOptions& options, int world, LinkKind link) {
  if (link == LinkKind::InProcess) return options.segment_bytes;
  if (link == LinkKind::SharedMemory) {
    return world < 3 ? options.segment_bytes
                     : std::min(options.segment_bytes, kSharedMemoryRingSegmentBytes);
  }
  return std::min(options.segment_bytes, kCopyingRingSegmentBytes);
}

}  // namespace ruccl
