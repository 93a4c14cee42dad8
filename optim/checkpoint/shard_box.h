#pragma once
// ShardBox: which elements of a tensor a shard holds, in the tensor's global coordinates. Two
// kinds, because sharding comes in two shapes:
//   - a box: an offset and a size per dimension (tensor parallelism cuts a weight along dim 0 or
//     dim 1; fully sharded parameters cut dim 0; a replicated tensor is the whole box);
//   - a flat range: elements [begin, begin + length) of the tensor flattened row-major (ZeRO's
//     shards of a flat buffer cut parameters anywhere).
// A sharded checkpoint (sharded_checkpoint.h) records each shard with its box and reassembles any
// other box or range from the shards that intersect it.
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/core/shape.h"

namespace ruccl::optim {

struct ShardBox {
  std::vector<std::int64_t> offset;  ///< per dimension (box), or {begin} (flat)
  std::vector<std::int64_t> size;    ///< per dimension (box), or {length} (flat)
  bool flat = false;

  /// The whole tensor of shape `global`.
  static ShardBox whole(const Shape& global);
  /// Rows [begin, begin + length) of dimension `dim` of `global`, the other dimensions whole.
  static ShardBox along(const Shape& global, int dim, std::int64_t begin, std::int64_t length);
  /// Elements [begin, begin + length) of the tensor flattened.
  static ShardBox flat_range(std::int64_t begin, std::int64_t length);

  std::int64_t numel() const;
  /// The shape a shard of this box has: `size`, or {length} for a flat range.
  Shape shape() const;
  /// Whether it fits in a tensor of shape `global` (a box: as many dimensions, each inside; a flat
  /// range: inside [0, numel)). `why` gets the reason when not.
  bool fits(const Shape& global, std::string* why = nullptr) const;
  /// "[0:4, 2:6]" or "flat [10:20)" (for messages).
  std::string to_string() const;

  friend bool operator==(const ShardBox&, const ShardBox&) = default;
};

/// The part of `a` that `b` also covers, when both are boxes or both flat ranges of one tensor;
/// empty (numel 0) when they do not meet.
ShardBox intersect(const ShardBox& a, const ShardBox& b);

}  // namespace ruccl::optim
