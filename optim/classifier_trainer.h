#pragma once
// A classifier trained data-parallel over N ranks on a LabelledImages dataset (optim/data/): the
// ranks are threads of this process (train_classifier) or processes, one rank each
// (train_classifier_rank). Each step splits the global batch into balanced shards, one per rank;
// each rank's loss is the cross-entropy SUM over its shard, and DataParallel divides the summed
// gradients by the global sample count (token-weighted replicas); then Adam or SGD steps. A
// seeded Generator shuffles the training set identically on every rank; per-rank step
// checkpoints (CheckpointSeries) are written every checkpoint_every steps and at epoch ends, and
// a run resumes from the newest one every rank holds, bit for bit. Threads and processes give
// bit-identical parameters for the same global batch (docs/training.md, "Processes and threads").
//
//   const LabelledImages train = read_idx_images(images, labels);
//   TrainResult r = train_classifier(train, test, [] { return make_my_model(); },
//                                    {.ranks = 2, .epochs = 1});
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"
#include "optim/data/idx_dataset.h"
#include "optim/progress_line.h"

namespace ruccl::optim {

/// What to train and how.
struct TrainOptions {
  int ranks = 2;                            ///< in-process data-parallel ranks (threads)
  int epochs = 10;                          ///< train until this many epochs are done
  std::int64_t batch = 128;                 ///< GLOBAL batch, split over the ranks
  double lr = 1e-3;                         ///< learning rate
  bool cosine_lr = false;                   ///< lr to 0 along a cosine over all steps (torch's
                                            ///< CosineAnnealingLR, T_max = epochs * batches)
  std::string optimizer = "adam";           ///< "adam" (torch's defaults) or "sgd" (momentum 0.9)
  std::uint64_t seed = 0;                   ///< shuffling (seed + 1 seeds the permutations)
  int threads_per_rank = 0;                 ///< 0: cores / ranks (at least 1)
  std::int64_t max_batches_per_epoch = -1;  ///< tests: cut epochs short
  bool evaluate = true;                     ///< test accuracy after each epoch
  bool record_step_losses = false;          ///< global loss of every step (tests)
  std::int64_t report_every = 25;           ///< progress (and loss all_reduce) interval
  std::filesystem::path checkpoint_dir;     ///< empty: no checkpoints
  std::int64_t checkpoint_every = 0;        ///< also every N steps (0: at epoch ends only)
  bool resume = false;                      ///< continue from checkpoint_dir (must hold one)
  /// Continue from checkpoint_dir's newest common checkpoint when there is one, else start
  /// afresh (what a job restarted by `ruccl-run --max-restarts` does).
  bool resume_if_any = false;
  /// Reduce the gradients bucket by bucket while backward runs (DataParallelOptions::overlap).
  bool overlap = false;
  /// With overlap: the bucket plan's cap (DataParallelOptions::bucket_cap_bytes).
  std::int64_t bucket_cap_bytes = 25LL << 20;
  /// Micro-batches per step: each rank's shard is cut into this many balanced pieces, the first
  /// ones folded by DataParallel::no_sync (nothing communicated), the last one's backward
  /// reducing the whole window once (overlapped under `overlap`). 1: no accumulation.
  int accumulate = 1;
  /// ZeRO stage (DataParallelOptions::zero_stage): 1 shards the optimizer state, 2 the gradients
  /// too; the final parameters are the plain run's, byte for byte. 0: off.
  int zero_stage = 0;
  /// Fully sharded parameters (nn::fully_shard): each layer of a Sequential model (the whole
  /// model otherwise) keeps a dim-0 shard of its parameters per rank, gathered in forward and
  /// re-gathered in backward; bit-identical to the plain run at 2 ranks. Not with zero_stage,
  /// overlap, accumulate > 1 or checkpoints (ValueError).
  bool fsdp = false;
  /// Test hook: rank kill_rank SIGKILLs itself right after optimizer step kill_after_step (before
  /// writing that step's checkpoint; when it is a checkpoint step, once rank 0 has written its
  /// file), on the first attempt of the job only (attempt 0). -1: never.
  std::int64_t kill_after_step = -1;
  int kill_rank = 1;
  int attempt = 0;               ///< how many times the job was restarted (RUCCL_RESTART_COUNT)
  bool rank_is_process = false;  ///< set by train_classifier_rank (what cpu_seconds counts)
  /// Where every rank's model, batches and collectives live (cuda:0: the ranks that are threads
  /// share it; batches are made on the host and copied over).
  Device device = Device::cpu();
};

/// One finished epoch.
struct EpochReport {
  int epoch = 0;                ///< 1-based
  std::int64_t steps = 0;       ///< optimizer steps so far
  double train_loss = 0.0;      ///< mean cross-entropy over the epoch's samples
  double test_accuracy = -1.0;  ///< in [0, 1]; -1 when not evaluated
  double train_seconds = 0.0;   ///< training loop time of this epoch
  double samples_per_second = 0.0;
  double elapsed_seconds = 0.0;  ///< since training started (evaluation included)
  /// CPU time of the epoch's training loop summed over the ranks: each process's whole CPU time
  /// (all its threads) when ranks are processes, each rank thread's own when they are threads
  /// (with one thread per rank that is all of the rank's work). A figure a busy machine barely
  /// changes.
  double cpu_seconds = 0.0;
};

/// Receives progress from rank 0's thread.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  /// After every report_every batches and at the epoch's end: where the epoch stands (mean
  /// loss so far, samples/s, seconds; ProgressPrinter prints it with an ETA).
  virtual void on_progress(const ProgressReport& /*report*/) {}
  virtual void on_epoch(const EpochReport& /*report*/) {}
  /// Training resumes after `steps` optimizer steps (`epochs_done` whole epochs) from the newest
  /// checkpoint every rank holds; `passed_over` is a newer step some rank (not all) had, or -1.
  virtual void on_resume(int /*epochs_done*/, std::int64_t /*steps*/,
                         std::int64_t /*passed_over*/) {}
};

/// What training returns.
struct TrainResult {
  std::vector<double> step_losses;  ///< with record_step_losses
  std::vector<EpochReport> epochs;  ///< the epochs run now (not those before a resume)
  std::vector<Tensor> parameters;   ///< the final parameters, in visit order
};

/// Makes one rank's replica on the host: a module whose forward maps an F32 batch [n, features]
/// (pixels scaled to [0, 1]) to logits [n, classes]. Every call must give the same parameters
/// with the same ParamIds (DataParallel::initialize checks it, then broadcasts rank 0's values);
/// the trainer moves it to options.device.
using ModelFactory = std::function<std::shared_ptr<nn::Module>()>;

/// Trains on `options.ranks` threads and returns rank 0's result; rethrows the first rank's
/// exception (the others are aborted, so none waits for a deadline). ValueError for bad options
/// (the kill_after_step hook needs processes: it would end every thread).
TrainResult train_classifier(const LabelledImages& train, const LabelledImages& test,
                             const ModelFactory& make_model, const TrainOptions& options,
                             TrainObserver* observer = nullptr);

/// Trains this process's rank of a job whose every rank is a process (`comm` from
/// Communicator::from_env(); options.ranks is ignored: the world size is comm's). The observer
/// hears from rank 0 only. `local_ranks`: the ranks sharing this machine, which share its cores.
/// Returns this rank's result (the parameters are the same on every rank).
TrainResult train_classifier_rank(Communicator& comm, const LabelledImages& train,
                                  const LabelledImages& test, const ModelFactory& make_model,
                                  const TrainOptions& options, TrainObserver* observer = nullptr,
                                  int local_ranks = 1);

}  // namespace ruccl::optim
