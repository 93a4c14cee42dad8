#pragma once
// ZeRO shards (DataParallelOptions::zero_stage, docs/training.md "ZeRO"): which elements of the
// model's trainable parameters each rank steps, and the gradients of those elements.
//
// DataParallel::reduce packs the gradients as BucketPlan::whole lays them out (one flat buffer of
// `total` elements per accumulation dtype: the gradients in plan order, then one flag word per
// parameter) and all-reduces it. The all_reduce folds chunk c of that buffer (the balanced chunks
// of algorithm.h: chunk_begin/chunk_size of `total` over W) over the ranks in chunk c's order. A
// ZeRO rank r owns exactly chunk r of every such buffer: its gradient elements are reduced to it
// with that chunk as fold window, so each one folds as the all_reduce folds it and the sharded
// step is bit-identical to the plain one at any world size.
//
//   whole F32 buffer: [ fc2.bias(3) fc2.weight(24) fc1.bias(8) fc1.weight(40) | 4 flags ] = 79
//   W = 3: rank 0 owns [0, 27), rank 1 [27, 53), rank 2 [53, 79)
//   rank 1's pieces: fc1.bias elements [0, 8) at offset 0, fc1.weight [0, 18) at offset 8
//
// A parameter is cut wherever the chunks cut it; a rank's shard may hold no parameter at all (a
// chunk of flag words only, or an empty chunk).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "optim/bucket_plan.h"
#include "optim/gradients_params.h"

namespace ruccl::optim {

/// One parameter's part of a rank's shard: elements [begin, begin + numel) of the parameter's
/// flattened value, at element `offset` of the shard's buffer.
struct ShardPiece {
  ParamId id = nn::kNoParamId;
  std::string path;
  DType param_dtype{};
  std::int64_t begin = 0;
  std::int64_t numel = 0;
  std::int64_t offset = 0;
};

/// A rank's chunk of one buffer of BucketPlan::whole.
struct ShardRange {
  DType dtype{};                   ///< the buffer's accumulation dtype
  std::int64_t total = 0;          ///< the buffer's elements (gradients and flag words)
  std::int64_t begin = 0;          ///< the chunk's first element in the buffer
  std::int64_t numel = 0;          ///< the chunk's elements
  std::int64_t padded = 0;         ///< the largest chunk of the buffer (all_gather's equal size)
  std::vector<ShardPiece> pieces;  ///< the parameters' elements in the chunk, in buffer order
};

/// The shard of one rank: one ShardRange per buffer of BucketPlan::whole (see the file comment).
class ZeroShard {
 public:
  ZeroShard() = default;
  /// Rank `rank`'s shard of `whole` (BucketPlan::whole of the model) over `world` ranks.
  static ZeroShard of(const BucketPlan& whole, int rank, int world);

  const std::vector<ShardRange>& ranges() const { return ranges_; }
  /// The index in ranges() of the buffer of accumulation dtype `dtype`. ValueError for none.
  std::size_t range_of(DType dtype) const;
  /// The parameter elements the shard holds.
  std::int64_t param_numel() const;

 private:
  std::vector<ShardRange> ranges_;
};

/// This rank's shard of the reduced gradients (DataParallel::reduce_shard / backward_shard):
/// for each ShardPiece, the gradient of its elements as a 1-D tensor in the parameter's dtype.
struct GradientShard {
  /// ParamId -> the 1-D gradient of the piece's elements. clip_grad_norm_(shard.pieces,
  /// max_norm, comm) clips them over all ranks (each rank holds disjoint elements).
  GradientsParams pieces;
  /// ParamId -> the piece's first element in the flattened parameter.
  std::map<ParamId, std::int64_t> begin;
};

}  // namespace ruccl::optim
