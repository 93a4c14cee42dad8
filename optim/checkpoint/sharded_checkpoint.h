#pragma once
// ShardedCheckpoint: tensors saved in shards by the ranks that hold them, and read back as any
// other shards, on any number of ranks: the format of sharded training (ZeRO's optimizer state,
// fully sharded parameters, tensor-parallel weights; docs/training.md, "Sharded checkpoints").
//
//   // save: every rank passes the shards it holds (a collective)
//   ShardedCheckpoint::save(comm, dir, {{.name = "fc.weight", .param_id = id,
//                                        .global_shape = {8, 4},
//                                        .box = ShardBox::along({8, 4}, 0, 2 * r, 2),
//                                        .value = my_rows}});
//   // load on another world size: every rank reads the box it now holds
//   ShardedCheckpoint ckpt = ShardedCheckpoint::open_on_every_rank(comm, dir);
//   Tensor mine = ckpt.read("fc.weight", ShardBox::along({8, 4}, 0, 4 * r, 4));
//   std::map<std::string, Tensor> whole = ckpt.consolidate();   // unsharded
//
// On disk (dir/): one file per rank, "rank-R-of-W-ID.shards" (ID: 16 hex digits agreed by the
// ranks for this save, so a new save never overwrites the files of the checkpoint it replaces),
// and "manifest.shards", written by rank 0 once every rank's file is in place: the world size,
// each rank's file name and the CRC-32 of its payload, and every shard's metadata (name,
// ParamId, dtype, global shape, box, padding). Each file is framed, checksummed and written
// atomically as a TrainingRecord is (record_file.h); the manifest's rename is the commit point:
// until it lands the old checkpoint is whole, after it the new one is, and rank 0 then removes
// the old checkpoint's rank files. Reading opens the manifest and reads a rank's file only when a
// shard of it is needed, checking it against the manifest (CRC, rank, metadata).
//
// Errors are CheckpointError and name what is wrong: the rank whose file is missing, damaged or
// not the one the manifest names, the tensor and the elements no shard covers, a box outside the
// tensor, a tensor the checkpoint does not hold. A collective save or open fails on every rank
// when it fails on one (naming the lowest failing rank).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "optim/checkpoint/shard_box.h"
#include "tensor/core/tensor.h"

namespace ruccl::optim {

/// One shard of a named tensor, as saved: the tensor's global shape and dtype, the box of it this
/// shard holds, and its elements.
struct TensorShard {
  std::string name;            ///< the tensor's key ("block0.fc.weight", "exp_avg/fc.weight")
  std::uint64_t param_id = 0;  ///< the parameter's ParamId (0: not a parameter's)
  std::vector<std::int64_t> global_shape;
  ShardBox box;              ///< which elements of the tensor `value` holds
  std::int64_t padding = 0;  ///< elements of padding the owner keeps past the box (not saved)
  Tensor value;              ///< box.shape() elements, any device, any dtype (the tensor's)
};

/// What the checkpoint says of one tensor.
struct ShardedTensorInfo {
  std::uint64_t param_id = 0;
  Shape global_shape;
  DType dtype = DType::F32;
  /// Its shards: the rank that wrote each and its box (and padding).
  struct Piece {
    int rank = 0;
    ShardBox box;
    std::int64_t padding = 0;
  };
  std::vector<Piece> pieces;
};

class ShardedCheckpoint {
 public:
  /// Collective: writes this rank's `shards` and, once every rank's file is written, the
  /// manifest (rank 0). Every rank must call it; a tensor's shards must agree on its dtype,
  /// global shape and ParamId across ranks (the same box may come from several ranks: a
  /// replicated tensor). CheckpointError on every rank when a rank's shards are malformed or its
  /// write fails (the previous checkpoint in `dir`, if any, is then untouched).
  static void save(Communicator& comm, const std::filesystem::path& dir,
                   const std::vector<TensorShard>& shards);

  /// Opens the checkpoint in `dir` (reads and checks its manifest only).
  static ShardedCheckpoint open(const std::filesystem::path& dir);
  /// Collective: open() on every rank; a failure on one is a CheckpointError on all.
  static ShardedCheckpoint open_on_every_rank(Communicator& comm, const std::filesystem::path& dir);

  /// The world size of the run that saved it.
  int world_size() const;
  /// The tensors it holds, sorted.
  std::vector<std::string> names() const;
  /// CheckpointError naming the tensor (and the ones it holds) when it has no such tensor.
  const ShardedTensorInfo& info(const std::string& name) const;

  /// The elements of `name` in `box` (a box of its global shape, or a flat range of it), on the
  /// host, assembled from every shard that intersects it whatever world size saved it.
  /// CheckpointError when the box is outside the tensor, when a needed rank file is missing or
  /// damaged (naming the rank and the tensor), or when no shard covers some of its elements.
  Tensor read(const std::string& name, const ShardBox& box) const;
  /// The whole tensor.
  Tensor read_whole(const std::string& name) const;
  /// Every tensor whole: the unsharded checkpoint.
  std::map<std::string, Tensor> consolidate() const;

  struct State;  // the manifest and the rank files read so far (sharded_checkpoint.cpp)
  ~ShardedCheckpoint();
  ShardedCheckpoint(ShardedCheckpoint&&) noexcept;
  ShardedCheckpoint& operator=(ShardedCheckpoint&&) noexcept;

 private:
  explicit ShardedCheckpoint(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ruccl::optim
