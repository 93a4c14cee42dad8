#pragma once
// Loading one TrainingRecord file per rank so that the ranks fail together: every rank loads and
// checks its own file, then the ranks agree that all of them succeeded (a collective every rank
// reaches whatever happened to its file) before any training collective starts. A missing or
// damaged file on one rank is then a CheckpointError on EVERY rank, promptly, instead of one rank
// failing while the others wait for it in the next collective until their deadline.
//
//   TrainingRecord record = optim::load_on_every_rank(comm, dir / str("rank", comm.rank(),
//   ".ckpt")); record.restore(model, &sgd, nullptr, nullptr, {.rank = comm.rank(), .world_size =
//   2});
#include <filesystem>

#include "collective/communicator.h"
#include "optim/checkpoint/training_record.h"

namespace ruccl::optim {

/// Collective. Loads this rank's record from `path` (TrainingRecord::load) and checks that it
/// was saved by this rank of a job of comm's world size (check_rank_and_world); then the ranks
/// agree. CheckpointError on every rank when any failed: on a rank whose own load failed, its
/// own reason (naming the file); on the others "rank R could not load <R's path>; no rank
/// resumes", R the lowest rank that failed.
TrainingRecord load_on_every_rank(Communicator& comm, const std::filesystem::path& path);

}  // namespace ruccl::optim
