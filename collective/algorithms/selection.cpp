#include "collective/algorithms/selection.h"

#include <algorithm>

namespace ruccl {

Algorithm auto_algorithm(OpKind kind, std::size_t bytes, bool zero_copy,
                         const CommunicatorOptions& options, int world, bool shared_memory) {
  if (zero_copy) return Algorithm::Direct;
  const bool from_3 = (kind == OpKind::AllReduce || kind == OpKind::Reduce) && world >= 3;
  const std::size_t threshold =
      shared_memory ? (from_3 ? options.shared_memory_ring_threshold_bytes_from_3
                              : options.shared_memory_ring_threshold_bytes)
                    : (from_3 ? options.ring_threshold_bytes_from_3 : options.ring_threshold_bytes);
  return bytes < threshold ? Algorithm::Direct : Algorithm::Ring;
}

std::size_t ring_segment_bytes(const CommunicatorOptions& options, int world, bool zero_copy,
                               bool shared_memory) {
  if (zero_copy) return options.segment_bytes;
  if (shared_memory) {
    return world < 3 ? options.segment_bytes
                     : std::min(options.segment_bytes, kSharedMemoryRingSegmentBytes);
  }
  return std::min(options.segment_bytes, kCopyingRingSegmentBytes);
}

}  // namespace ruccl
