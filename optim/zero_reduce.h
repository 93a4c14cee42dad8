#pragma once
// The ZeRO-2 reduction (optim/zero_shard.h): each element of a whole gradient buffer reduced to
// the one rank whose chunk holds it, folded as the buffer's all_reduce folds it.
//
// A piece of the buffer (DataParallel::reduce's whole buffer, or one bucket of it: elements
// [offset, offset + n) of `total`) meets the chunks of some ranks; for each such rank r, in rank
// order, one reduce of the shared elements to root r with them as fold window
// (CallOptions::with_fold_window): every element folds over the ranks in its chunk's order, as in
// the all_reduce, and only r receives it. On the wire this is a reduce-scatter (each rank sends
// each owner that owner's elements once); it takes one call per owner the piece meets.
#include <cstdint>
#include <exception>
#include <vector>

#include "collective/communicator.h"
#include "collective/work.h"
#include "optim/zero_shard.h"

namespace ruccl::optim {

/// One started reduce of a piece's elements to their owner.
struct OwnerReduce {
  Work work;
  int owner = 0;
  std::int64_t at = 0;     ///< where the elements start in the owner's chunk
  std::int64_t numel = 0;  ///< how many
};

/// Starts the reduces of `grads` (elements [offset, offset + grads.numel()) of a `total`-element
/// buffer, 1-D, contiguous) to the ranks whose chunks it meets (see the file comment).
std::vector<OwnerReduce> start_owner_reduces(Communicator& comm, const Tensor& grads,
                                             std::int64_t offset, std::int64_t total,
                                             const char* label);

/// Waits for every reduce (all of them, whatever fails) and copies this rank's results into
/// `own_chunk` (this rank's chunk of the buffer) at their places. The first error goes to
/// `failure` when it holds none yet.
void collect_owned(const std::vector<OwnerReduce>& reduces, int rank, Tensor& own_chunk,
                   std::exception_ptr& failure);

/// The blocking form for a whole buffer: this rank's chunk of the summed `buffer`.
Tensor reduce_to_owners(Communicator& comm, const Tensor& buffer, std::int64_t offset,
                        std::int64_t total, const char* label);

/// Adds the pieces of `range` (this rank's chunk of one whole buffer) to `shard`: views of
/// `own_chunk`, in their parameters' dtypes.
void add_pieces(GradientShard& shard, const Tensor& own_chunk, const ShardRange& range);

}  // namespace ruccl::optim
