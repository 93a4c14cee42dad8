#include "collective/algorithms/selection.h"

#include <algorithm>

namespace ruccl {

Algorithm auto_algorithm(OpKind kind, std::size_t bytes, LinkKind link,
                         const CommunicatorOptions& options, int world) {
  if (link == LinkKind::InProcess) return Algorithm::Direct;
  const bool shared_memory = link == LinkKind::SharedMemory;
  const bool from_3 = (kind == OpKind::AllReduce || kind == OpKind::Reduce) && world >= 3;
  const std::size_t threshold =
      shared_memory ? (from_3 ? options.shared_memory_ring_threshold_bytes_from_3
                              : options.shared_memory_ring_threshold_bytes)
                    : (from_3 ? options.ring_threshold_bytes_from_3 : options.ring_threshold_bytes);
  return bytes < threshold ? Algorithm::Direct : Algorithm::Ring;
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
