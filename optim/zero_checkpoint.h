#pragma once
// ZeRO checkpoints (docs/training.md, "ZeRO checkpoints"): a data-parallel run's model, optimizer
// state and caller state written as a ShardedCheckpoint (optim/checkpoint/sharded_checkpoint.h),
// each rank writing the elements its ZeRO shard holds, nothing gathered; read back on any number
// of ranks, with or without ZeRO.
//
//   save_zero_checkpoint(dp, dir, optimizer, model, {.step = step, .rng = gen.state()});
//   ...
//   CallerState caller = load_zero_checkpoint(dp, dir, optimizer, model);  // any world size
//
// What each rank writes (the tensor names of the checkpoint):
//   param/<path>          a trainable parameter: its elements in this rank's ZeRO shard, a flat
//                         range (the shards of BucketPlan::whole over W ranks, optim/zero_shard.h,
//                         whatever the stage: plain DataParallel writes the same ranges); a frozen
//                         one whole, by rank 0
//   buffer/<path>         a module buffer, whole, by rank 0
//   <state>/<path>        the optimizer state of the shard's elements, a flat range of the
//                         parameter's shape: exp_avg, exp_avg_sq (Adam, AdamW), momentum_buffer
//                         (Sgd)
//   steps/<path>          the parameter's step count, [1] I64, by every rank that stepped it
//   caller/rank-<r>       rank r's CallerState and the optimizer's kind and hyper-parameters (a
//                         TrainingRecord of no model, its bytes)
// So every parameter and state element is written once, by the rank that steps it: W files of
// about Ψ(4 + 8)/W bytes for an F32 Adam model, in parallel, and no rank ever holds more than its
// shard of the optimizer state.
//
// Loading reads every parameter whole (each rank holds the whole model under ZeRO-1/2), the
// optimizer state of this rank's shard of the loading run (the whole state without ZeRO), cut
// from whichever saved shards meet it. The caller state is this rank's when the world size is the
// saved one, else rank 0's (the caller then owns what its data position means).
//
// Errors: CheckpointError on every rank together, the same message naming the rank that failed,
// the parameter and the cause (a missing or damaged rank file names the rank that wrote it; a
// model or optimizer that does not match names the difference). Nothing is changed unless every
// rank read everything.
#include <filesystem>

#include "autodiff/nn/module.h"
#include "optim/checkpoint/caller_state.h"
#include "optim/data_parallel.h"
#include "optim/optimizer.h"

namespace ruccl::optim {

/// Collective: writes the sharded checkpoint of `model`, `optimizer` (whatever state it holds:
/// this rank's ZeRO shard, or the whole state) and `caller` into `dir` (see the file comment);
/// a previous checkpoint there stays whole until the new one is. `caller`'s rank and world size
/// are set to dp's.
void save_zero_checkpoint(DataParallel& dp, const std::filesystem::path& dir,
                          const Optimizer& optimizer, const nn::Module& model,
                          CallerState caller = {});

/// Collective: restores `model` and `optimizer` from the checkpoint in `dir`, written on any
/// number of ranks, resharded to dp's shard (the whole state without ZeRO). Returns the caller
/// state (this rank's, or rank 0's at another world size). Call it right after
/// DataParallel::initialize, before the first step.
CallerState load_zero_checkpoint(DataParallel& dp, const std::filesystem::path& dir,
                                 Optimizer& optimizer, nn::Module& model);

}  // namespace ruccl::optim
