#pragma once
// TrainingRecord: everything one rank needs to resume training bit for bit — model parameters,
// module buffers (BatchNorm's running statistics) and module generators (Dropout's masks),
// optimizer state, scheduler state, pending accumulated gradients and the caller's own position and
// named values (optim/checkpoint/caller_state.h) — saved as a cereal archive inside a checksummed,
// versioned, atomically written file (optim/checkpoint/record_file.h).
//
//   // save (each rank its own file)
//   TrainingRecord::capture(model, &optimizer, &schedule, &accumulator,
//                           {.step = step, .data_position = pos, .rng = gen.state(),
//                            .rank = comm.rank(), .world_size = comm.world_size()})
//       .save(dir / ("rank" + std::to_string(rank) + ".ckpt"));
//   // resume
//   TrainingRecord record = TrainingRecord::load(path);        // CheckpointError if damaged
//   record.restore(model, &optimizer, &schedule, &accumulator,  // checks ids, shapes, dtypes,
//                  {.rank = comm.rank(), .world_size = comm.world_size()});  // rank and world
//   gen.set_state(record.caller().rng);
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"
#include "optim/checkpoint/caller_state.h"
#include "optim/checkpoint/recorded_buffers.h"
#include "optim/checkpoint/tensor_blob.h"
#include "optim/gradients_accumulator.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "tensor/random/generator.h"

namespace ruccl::optim {

/// Where restore() runs. A record restores only on the rank and world size that wrote it (its
/// CallerState), since a rank's optimizer state, accumulated gradients and data position belong
/// to its shard: a resume with another world size or a swapped file would silently train on the
/// wrong state.
struct RestoreOptions {
  std::int64_t rank = 0;        ///< this run's rank (0 for a single-process run)
  std::int64_t world_size = 1;  ///< this run's world size
  /// Restore a record written by another rank or world size anyway: for tools that re-shard or
  /// inspect records, or to continue a run on another number of ranks on purpose (the caller
  /// then owns what the data position and RNG state mean there).
  bool allow_other_rank_or_world = false;
};

/// One parameter as recorded: its first path, id, trainable flag and value.
struct RecordedParam {
  std::string path;
  std::uint64_t id = 0;
  bool trainable = true;
  TensorBlob value;
};

/// One module generator as recorded: its dotted path (Module::named_generators) and state.
struct RecordedGenerator {
  std::string path;
  Generator::State state{};
};

/// A per-rank training checkpoint. See the file comment.
class TrainingRecord {
 public:
  /// Copies the state of `model` (its parameters, its buffers, Module::named_buffers, and the
  /// state of every module generator, Module::named_generators: Dropout's) and of each non-null
  /// component. Nothing is modified. ValueError when `caller` has a world size below 1 or a rank
  /// outside [0, world size).
  static TrainingRecord capture(const nn::Module& model, const Optimizer* optimizer = nullptr,
                                const LrScheduler* scheduler = nullptr,
                                const GradientsAccumulator* accumulator = nullptr,
                                const CallerState& caller = {});

  /// Writes the record to `path` atomically (temporary file, fsync, rename, fsync of the
  /// directory). CheckpointError naming the file when anything fails (the target is untouched).
  void save(const std::filesystem::path& path) const;
  /// Reads a record. CheckpointError naming the file and the reason for a missing, special
  /// (directory, FIFO, device), truncated, corrupted, wrong-version or malformed file; every
  /// tensor in it is validated here (dtype, shape, byte count) without allocating it.
  static TrainingRecord load(const std::filesystem::path& path);

  /// Puts the recorded state back into `model` and each non-null component. Checks first, and
  /// changes nothing unless everything matches: the record's rank and world size must be
  /// `options`' (unless `options.allow_other_rank_or_world`); the model must have exactly the
  /// recorded ParamIds, with the same shapes, dtypes and trainable flags, exactly the recorded
  /// buffer paths with the same shapes and dtypes (a record without buffers, written before
  /// records held them, restores a model without buffers), and exactly the recorded generator
  /// paths (whose states it then takes); a component passed
  /// here must have been captured (and of the same kind and configuration); optimizer and
  /// accumulator state must refer to the model's parameters with matching sizes. CheckpointError
  /// otherwise, naming the file (when loaded from one) and the parameter; ValueError for
  /// `options` with a world size below 1 or a rank outside it.
  void restore(nn::Module& model, Optimizer* optimizer = nullptr, LrScheduler* scheduler = nullptr,
               GradientsAccumulator* accumulator = nullptr,
               const RestoreOptions& options = {}) const;
  /// The rank and world-size part of restore()'s checks alone, for a caller that wants every
  /// rank to agree that its record fits before any of them restores. Same errors as restore().
  void check_rank_and_world(const RestoreOptions& options) const;

  /// The caller state given to capture().
  const CallerState& caller() const { return caller_; }
  /// The recorded parameters, in the model's visit order.
  const std::vector<RecordedParam>& params() const { return params_; }
  /// The recorded module buffers, in the model's named_buffers() order.
  const std::vector<RecordedBuffer>& buffers() const { return buffers_; }
  /// The recorded module generators, in the model's visit order.
  const std::vector<RecordedGenerator>& generators() const { return generators_; }
  bool has_optimizer() const { return optimizer_.has_value(); }
  bool has_scheduler() const { return scheduler_.has_value(); }
  bool has_accumulator() const { return accumulator_.has_value(); }
  /// The file this record was loaded from (empty when captured).
  const std::filesystem::path& source() const { return source_; }

  /// The cereal payload (what save() frames); exposed for tests and custom storage.
  std::string serialize_payload() const;
  /// Parses a payload; `origin` names it in errors. CheckpointError when malformed.
  static TrainingRecord parse_payload(const std::string& payload, const std::string& origin);

 private:
  std::vector<RecordedParam> params_;
  std::vector<RecordedGenerator> generators_;
  std::vector<RecordedBuffer> buffers_;
  std::optional<OptimizerState> optimizer_;
  std::optional<SchedulerState> scheduler_;
  std::optional<AccumulatorState> accumulator_;
  CallerState caller_;
  std::filesystem::path source_;

  std::string where() const;
};

}  // namespace ruccl::optim
