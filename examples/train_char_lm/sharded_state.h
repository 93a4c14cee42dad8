#pragma once
// train_char_lm's sharded checkpoints (docs/parallelism.md, "The char LM on a mesh"): the
// parameters and the optimizer's buffers of lm::Gpt or lm::TpGpt saved as a ShardedCheckpoint in
// the whole (one-rank) model's coordinates -- each tensor keyed by its parameter path ("exp_avg"
// buffers as "opt0/PATH", "opt1/PATH"), each rank's shard a box of it -- plus a TrainingRecord of
// the scheduler and the caller state (step, data generator, each parameter's optimizer steps).
// So a run on one mesh resumes on any other: --tp 2 --dp 2 -> --tp 1 -> --tp 2.
//
// On disk: DIR/sharded-step-N/shards/ (the ShardedCheckpoint) and DIR/sharded-step-N/caller.record
// (written by rank 0 once the shards are committed: the step's checkpoint is whole when both are
// there).
#include <cstdint>
#include <filesystem>
#include <optional>

#include "autodiff/nn/module.h"
#include "examples/train_char_lm/tp_gpt.h"
#include "optim/optim.h"

namespace ruccl::examples::char_lm {

/// Who saves what: `layout` places this rank's shards; only the first data-parallel replica
/// (`dp_lead`) writes, and of a replicated tensor only its tensor-parallel rank 0.
struct ShardedSaveRoles {
  ShardLayout layout;
  bool dp_lead = true;
};

/// Collective of `comm` (every rank): saves step `step`'s state under DIR/sharded-step-N.
void save_sharded_state(Communicator& comm, const std::filesystem::path& dir, std::int64_t step,
                        const nn::Module& model, const ShardedSaveRoles& roles,
                        const optim::Optimizer& opt, const optim::LrScheduler& schedule,
                        optim::CallerState caller);

/// The newest step whose sharded checkpoint is whole in DIR, as rank 0 sees it (collective);
/// nullopt when there is none.
std::optional<std::int64_t> newest_sharded_step(Communicator& comm,
                                                const std::filesystem::path& dir);

/// Collective: reads step `step`'s checkpoint into `model` (this rank's shards, by `layout`),
/// `opt` and `schedule`; returns the caller state. CheckpointError when it does not fit.
optim::CallerState load_sharded_state(Communicator& comm, const std::filesystem::path& dir,
                                      std::int64_t step, nn::Module& model,
                                      const ShardLayout& layout, optim::Optimizer& opt,
                                      optim::LrScheduler& schedule);

/// Rank 0 removes every sharded-step-N of DIR (a fresh run); collective.
void remove_sharded_states(Communicator& comm, const std::filesystem::path& dir);

}  // namespace ruccl::examples::char_lm
