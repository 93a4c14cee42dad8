#include "optim/zero_shard.h"

#include <algorithm>

#include "collective/algorithms/algorithm.h"

namespace ruccl::optim {

ZeroShard ZeroShard::of(const BucketPlan& whole, int rank, int world) {
  RUCCL_CHECK(world > 0 && rank >= 0 && rank < world, ValueError,
              "ZeroShard::of: expected 0 <= rank < world, got rank ", rank, " and world ", world);
  ZeroShard shard;
  const auto w = static_cast<std::size_t>(world);
  const auto r = static_cast<std::size_t>(rank);
  for (const Bucket& bucket : whole.buckets()) {
    ShardRange range;
    range.dtype = bucket.dtype;
    range.total = bucket.buffer_numel();
    const auto total = static_cast<std::size_t>(range.total);
    range.begin = static_cast<std::int64_t>(chunk_begin(r, total, w));
    range.numel = static_cast<std::int64_t>(chunk_size(r, total, w));
    range.padded = static_cast<std::int64_t>(chunk_size(0, total, w));  // chunk 0 is a largest
    const std::int64_t end = range.begin + range.numel;
    for (const BucketEntry& entry : bucket.entries) {
      const std::int64_t lo = std::max(range.begin, entry.offset);
      const std::int64_t hi = std::min(end, entry.offset + entry.numel);
      if (hi <= lo) continue;
      range.pieces.push_back(ShardPiece{entry.id, entry.path, entry.param_dtype, lo - entry.offset,
                                        hi - lo, lo - range.begin});
    }
    shard.ranges_.push_back(std::move(range));
  }
  return shard;
}

std::size_t ZeroShard::range_of(DType dtype) const {
  for (std::size_t i = 0; i < ranges_.size(); ++i) {
    if (ranges_[i].dtype == dtype) return i;
  }
  RUCCL_CHECK(false, ValueError, "ZeroShard::range_of: expected a buffer of ", dtype,
              " in the shard, got none");
  return 0;
}

std::int64_t ZeroShard::param_numel() const {
  std::int64_t n = 0;
  for (const ShardRange& range : ranges_) {
    for (const ShardPiece& piece : range.pieces) n += piece.numel;
  }
  return n;
}

}  // namespace ruccl::optim
