#pragma once
// CheckpointSeries: the per-step checkpoints of a data-parallel job in one folder, and the
// protocol that makes a job killed at any instant resume from a state EVERY rank holds
// (docs/training.md, "Resuming after a kill").
//
//   DIR/rank<r>-step<s>.ckpt     rank r's TrainingRecord after optimizer step s
//
// save(comm, record, s) (collective): every rank writes its file atomically (TrainingRecord::save:
// temporary file, fsync, rename), then the ranks agree that every rank wrote step s; only after
// that agreement does a rank delete its files of older steps. So at any instant every rank holds
// the last agreed step L, and possibly one newer step it wrote before the others (or before dying).
//
// load_newest_common(comm) (collective, on restart): every rank lists its files, loads each and
// verifies it (checksum, format, the step, rank and world size recorded inside); the ranks
// all-gather the lists of verified steps and take the newest step in EVERY rank's list. A
// checkpoint only some ranks finished, or one whose file is damaged on one rank, is never used.
// Files newer than the chosen step are deleted (abandoned futures the resumed run rewrites).
//
//   optim::CheckpointSeries series(dir, comm.rank(), comm.world_size());
//   if (auto record = series.load_newest_common(comm)) { record->restore(...); ... }
//   ...
//   series.save(comm, TrainingRecord::capture(model, &opt, nullptr, nullptr, caller), step);
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "collective/communicator.h"
#include "optim/checkpoint/training_record.h"

namespace ruccl::optim {

/// A rank's view of the job's step checkpoints. See the file comment.
class CheckpointSeries {
 public:
  /// At most this many of a rank's newest files take part in load_newest_common: save() keeps at
  /// most two per rank, so more only appear when files are left from elsewhere.
  static constexpr std::size_t kMaxCandidates = 8;

  /// ValueError when world_size < 1 or rank is outside [0, world_size).
  CheckpointSeries(std::filesystem::path dir, int rank, int world_size);

  /// DIR/rank<rank>-step<step>.ckpt
  std::filesystem::path path(int rank, std::int64_t step) const;
  /// The steps of this rank's files in DIR (names that parse exactly), newest first; empty when
  /// DIR does not exist.
  std::vector<std::int64_t> listed_steps() const;

  /// Collective. Writes `record` (whose caller state must say `step`, this rank and world size)
  /// as this rank's file of `step`, agrees with every rank that all of them wrote it, then deletes
  /// this rank's files of older steps. CheckpointError on every rank, naming the ranks that
  /// failed and why, when any rank could not write its file (the older files are then kept).
  void save(Communicator& comm, const TrainingRecord& record, std::int64_t step) const;

  /// Collective. The record of the newest step that every rank holds and verified, loaded on
  /// every rank; std::nullopt on every rank when there is none. Deletes this rank's files of
  /// newer steps. CheckpointError on every rank when a rank holds a verified file written by a
  /// run of another world size (naming it and the world size that wrote it). When
  /// `newest_anywhere` is given it receives the newest step ANY rank verified (-1: none), so a
  /// caller can say which newer checkpoint it passed over because not every rank holds it.
  std::optional<TrainingRecord> load_newest_common(Communicator& comm,
                                                   std::int64_t* newest_anywhere = nullptr) const;

  /// Deletes this rank's files of the series (a fresh start; other files in DIR are untouched).
  void remove_own() const;

 private:
  std::filesystem::path dir_;
  int rank_;
  int world_size_;
};

}  // namespace ruccl::optim
