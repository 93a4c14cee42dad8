#include "optim/zero_reduce.h"

#include <algorithm>

#include "collective/algorithms/algorithm.h"

namespace ruccl::optim {

std::vector<OwnerReduce> start_owner_reduces(Communicator& comm, const Tensor& grads,
                                             std::int64_t offset, std::int64_t total,
                                             const char* label) {
  std::vector<OwnerReduce> out;
  const auto world = static_cast<std::size_t>(comm.world_size());
  const std::int64_t end = offset + grads.numel();
  for (std::size_t r = 0; r < world; ++r) {
    const auto begin =
        static_cast<std::int64_t>(chunk_begin(r, static_cast<std::size_t>(total), world));
    const auto size =
        static_cast<std::int64_t>(chunk_size(r, static_cast<std::size_t>(total), world));
    const std::int64_t lo = std::max(offset, begin);
    const std::int64_t hi = std::min(end, begin + size);
    if (hi <= lo) continue;  // the same on every rank: the layout is agreed
    CallOptions call = CallOptions().with_label(label).with_fold_window(lo, total);
    out.push_back(OwnerReduce{comm.reduce_async(grads.narrow(0, lo - offset, hi - lo),
                                                static_cast<int>(r), ReduceOperation::Sum, call),
                              static_cast<int>(r), lo - begin, hi - lo});
  }
  return out;
}

void collect_owned(const std::vector<OwnerReduce>& reduces, int rank, Tensor& own_chunk,
                   std::exception_ptr& failure) {
  for (const OwnerReduce& r : reduces) {
    try {
      const Tensor sum = r.work.result();
      if (r.owner == rank) own_chunk.narrow(0, r.at, r.numel).copy_(sum);
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
}

Tensor reduce_to_owners(Communicator& comm, const Tensor& buffer, std::int64_t offset,
                        std::int64_t total, const char* label) {
  const auto world = static_cast<std::size_t>(comm.world_size());
  const auto rank = static_cast<std::size_t>(comm.rank());
  Tensor own = Tensor::zeros(
      Shape{static_cast<std::int64_t>(chunk_size(rank, static_cast<std::size_t>(total), world))},
      buffer.dtype(), buffer.device());
  std::exception_ptr failure;
  collect_owned(start_owner_reduces(comm, buffer, offset, total, label), comm.rank(), own, failure);
  if (failure) std::rethrow_exception(failure);
  return own;
}

void add_pieces(GradientShard& shard, const Tensor& own_chunk, const ShardRange& range) {
  for (const ShardPiece& piece : range.pieces) {
    Tensor g = own_chunk.narrow(0, piece.offset, piece.numel);
    shard.pieces.insert(piece.id, g.dtype() == piece.param_dtype ? g : g.to(piece.param_dtype));
    shard.begin[piece.id] = piece.begin;
  }
}

}  // namespace ruccl::optim
