#pragma once
// TrainingRecord: everything one rank needs to resume training bit for bit — model parameters,
// optimizer state, scheduler state, pending accumulated gradients and the caller's own position
// (step, data position, RNG state) — saved as a cereal archive inside a checksummed, versioned,
// atomically written file (optim/record_file.h).
//
//   // save (each rank its own file)
//   TrainingRecord::capture(model, &optimizer, &schedule, &accumulator,
//                           {.step = step, .data_position = pos, .rng = gen.state()})
//       .save(dir / ("rank" + std::to_string(rank) + ".ckpt"));
//   // resume
//   TrainingRecord record = TrainingRecord::load(path);        // CheckpointError if damaged
//   record.restore(model, &optimizer, &schedule, &accumulator);   // checks ids, shapes, dtypes
//   gen.set_state(record.caller().rng);
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"
#include "optim/gradients_accumulator.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/tensor_blob.h"
#include "tensor/random/generator.h"

namespace ruccl::optim {

/// The caller's own training position.
struct CallerState {
  std::int64_t step = 0;           ///< optimizer steps taken
  std::int64_t data_position = 0;  ///< where the data stream continues (sample, batch, byte...)
  Generator::State rng{};          ///< the data-order / dropout generator
  std::int64_t rank = 0;           ///< the rank that wrote the record (informative)
  std::int64_t world_size = 1;     ///< the world size of the run that wrote it (informative)
};

/// One parameter as recorded: its first path, id, trainable flag and value.
struct RecordedParam {
  std::string path;
  std::uint64_t id = 0;
  bool trainable = true;
  TensorBlob value;
};

/// A per-rank training checkpoint. See the file comment.
class TrainingRecord {
 public:
  /// Copies the state of `model` and of each non-null component. Nothing is modified.
  static TrainingRecord capture(const nn::Module& model, const Optimizer* optimizer = nullptr,
                                const LrScheduler* scheduler = nullptr,
                                const GradientsAccumulator* accumulator = nullptr,
                                const CallerState& caller = {});

  /// Writes the record to `path` atomically (temporary file, fsync, rename, fsync of the
  /// directory). CheckpointError naming the file when anything fails (the target is untouched).
  void save(const std::filesystem::path& path) const;
  /// Reads a record. CheckpointError naming the file and the reason for a missing, truncated,
  /// corrupted, wrong-version or malformed file.
  static TrainingRecord load(const std::filesystem::path& path);

  /// Puts the recorded state back into `model` and each non-null component. Checks first, and
  /// changes nothing unless everything matches: the model must have exactly the recorded
  /// ParamIds, with the same shapes, dtypes and trainable flags; a component passed here must
  /// have been captured (and of the same kind and configuration); optimizer and accumulator
  /// state must refer to the model's parameters with matching sizes. CheckpointError otherwise,
  /// naming the file (when loaded from one) and the parameter.
  void restore(nn::Module& model, Optimizer* optimizer = nullptr, LrScheduler* scheduler = nullptr,
               GradientsAccumulator* accumulator = nullptr) const;

  /// The caller state given to capture().
  const CallerState& caller() const { return caller_; }
  /// The recorded parameters, in the model's visit order.
  const std::vector<RecordedParam>& params() const { return params_; }
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
  std::optional<OptimizerState> optimizer_;
  std::optional<SchedulerState> scheduler_;
  std::optional<AccumulatorState> accumulator_;
  CallerState caller_;
  std::filesystem::path source_;

  std::string where() const;
};

}  // namespace ruccl::optim
