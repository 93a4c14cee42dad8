#pragma once
// The training loop of train_fashion_mnist, header-only so that tests/optim can run it on a tiny
// synthetic dataset: an MLP trained data-parallel over N in-process ranks (threads) with
// token-weighted DataParallel gradients (each rank's loss is a SUM over its shard of the global
// batch; DataParallel divides by the global sample count), Adam or SGD, a seeded Generator that
// shuffles the training set identically on every rank, and per-rank TrainingRecord checkpoints at
// epoch ends.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "autodiff/grad_mode.h"
#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "examples/train_fashion_mnist/idx_dataset.h"
#include "optim/adam.h"
#include "optim/checkpoint_error.h"
#include "optim/data_parallel.h"
#include "optim/rank_agreement.h"
#include "optim/sgd.h"
#include "optim/training_record.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace ruccl::examples::fashion_mnist {

/// What to train and how.
struct TrainOptions {
  int ranks = 2;                   ///< in-process data-parallel ranks (threads)
  int epochs = 10;                 ///< train until this many epochs are done
  std::int64_t batch = 128;        ///< GLOBAL batch, split over the ranks
  double lr = 1e-3;                ///< learning rate
  std::string optimizer = "adam";  ///< "adam" or "sgd" (momentum 0.9)
  std::vector<std::int64_t> hidden = {512, 512};
  std::uint64_t seed = 0;                   ///< model initialisation and shuffling
  int threads_per_rank = 0;                 ///< 0: cores / ranks (at least 1)
  std::int64_t max_batches_per_epoch = -1;  ///< tests: cut epochs short
  bool evaluate = true;                     ///< test accuracy after each epoch
  bool record_step_losses = false;          ///< global loss of every step (tests)
  std::int64_t report_every = 25;           ///< progress (and loss all_reduce) interval
  std::filesystem::path checkpoint_dir;     ///< empty: no checkpoints
  bool resume = false;                      ///< continue from checkpoint_dir
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
};

/// Receives progress from rank 0's thread (printing lives in main.cpp).
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  /// After `batch` of `batches` batches of `epoch` (1-based): mean loss so far, samples/s.
  virtual void on_progress(int /*epoch*/, std::int64_t /*batch*/, std::int64_t /*batches*/,
                           double /*loss*/, double /*samples_per_second*/) {}
  virtual void on_epoch(const EpochReport& /*report*/) {}
  /// Training resumes after `epochs_done` epochs from checkpoint files.
  virtual void on_resume(int /*epochs_done*/, std::int64_t /*steps*/) {}
};

/// What train() returns (from rank 0).
struct TrainResult {
  std::vector<double> step_losses;  ///< with record_step_losses
  std::vector<EpochReport> epochs;  ///< the epochs run now (not those before a resume)
  std::vector<Tensor> parameters;   ///< the final parameters, in visit order
};

/// The MLP: Linear + ReLU per hidden size, then Linear to the classes. ParamIds 1, 2, ... in
/// visit order (the same on every rank and every run).
inline std::shared_ptr<nn::Sequential> make_mlp(std::int64_t features,
                                                const std::vector<std::int64_t>& hidden,
                                                std::int64_t classes, std::uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  std::int64_t in = features;
  for (std::int64_t h : hidden) {
    model->push_back(std::make_shared<nn::Linear>(in, h, gen));
    model->push_back(std::make_shared<nn::ReLU>());
    in = h;
  }
  model->push_back(std::make_shared<nn::Linear>(in, classes, gen));
  model->assign_param_ids(1);
  return model;
}

/// rank<r>.ckpt in `dir`.
inline std::filesystem::path rank_checkpoint(const std::filesystem::path& dir, int rank) {
  return dir / ("rank" + std::to_string(rank) + ".ckpt");
}

namespace detail {

/// Rows `indices[lo, hi)` of `data` as an F32 batch scaled to [0, 1] and I64 labels.
inline std::pair<Tensor, Tensor> make_batch(const Dataset& data,
                                            const std::vector<std::int64_t>& indices,
                                            std::int64_t lo, std::int64_t hi) {
  const std::int64_t n = hi - lo;
  Tensor x = Tensor::empty(Shape{n, data.features}, DType::F32);
  Tensor y = Tensor::empty(Shape{n}, DType::I64);
  float* px = x.data<float>();
  std::int64_t* py = y.data<std::int64_t>();
  const float scale = 1.0f / 255.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = indices[static_cast<std::size_t>(lo + i)];
    const std::uint8_t* src = data.pixels.data() + row * data.features;
    float* dst = px + i * data.features;
    for (std::int64_t f = 0; f < data.features; ++f) dst[f] = static_cast<float>(src[f]) * scale;
    py[i] = data.labels[static_cast<std::size_t>(row)];
  }
  return {x, y};
}

/// Fraction of `data` classified correctly, each rank evaluating its contiguous shard.
inline double evaluate(Communicator& comm, nn::Module& model, const Dataset& data) {
  autodiff::NoGradGuard no_grad;
  const int r = comm.rank();
  const int w = comm.world_size();
  const std::int64_t lo = data.count * r / w;
  const std::int64_t hi = data.count * (r + 1) / w;
  std::vector<std::int64_t> identity(static_cast<std::size_t>(data.count));
  for (std::int64_t i = 0; i < data.count; ++i) identity[static_cast<std::size_t>(i)] = i;
  std::int64_t correct = 0;
  constexpr std::int64_t kChunk = 1000;
  for (std::int64_t start = lo; start < hi; start += kChunk) {
    const auto [x, y] = make_batch(data, identity, start, std::min(hi, start + kChunk));
    const Tensor predicted = argmax(model.forward(autodiff::Var(x)).value(), 1);
    correct += sum(eq(predicted, y)).item<std::int64_t>();
  }
  const Tensor totals =
      comm.all_reduce(Tensor::from_vector<std::int64_t>({correct, hi - lo}), ReduceOperation::Sum);
  const std::vector<std::int64_t> t = totals.to_vector<std::int64_t>();
  return t[1] > 0 ? static_cast<double>(t[0]) / static_cast<double>(t[1]) : 0.0;
}

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// One rank's whole training run.
inline TrainResult train_rank(Communicator& comm, const Dataset& train, const Dataset& test,
                              const TrainOptions& options, TrainObserver* observer) {
  const int rank = comm.rank();
  const int world = comm.world_size();
  TrainObserver* report = rank == 0 ? observer : nullptr;
  auto model = make_mlp(train.features, options.hidden, train.classes, options.seed);
  std::unique_ptr<optim::Optimizer> opt;
  if (options.optimizer == "sgd") {
    opt = std::make_unique<optim::Sgd>(optim::SgdOptions{.momentum = 0.9});
  } else {
    opt = std::make_unique<optim::Adam>();
  }
  Generator shuffle(options.seed + 1);  // the same stream on every rank
  int first_epoch = 0;
  std::int64_t steps = 0;

  if (options.resume) {
    // Every rank loads its file, then the ranks agree before any training collective.
    std::optional<optim::TrainingRecord> record;
    std::string failure;
    try {
      record = optim::TrainingRecord::load(rank_checkpoint(options.checkpoint_dir, rank));
      if (record->caller().world_size != world) {
        failure = str("checkpoint ", rank_checkpoint(options.checkpoint_dir, rank),
                      " was written by a run with ", record->caller().world_size,
                      " ranks; resume with --ranks ", record->caller().world_size);
      } else {
        record->check_rank_and_world({.rank = rank, .world_size = world});  // a swapped file
      }
    } catch (const optim::CheckpointError& e) {
      failure = e.what();
    }
    const auto ok = optim::all_gather_words(comm, {failure.empty() ? 1 : 0}, "resume: load");
    if (!failure.empty()) throw optim::CheckpointError(failure);
    for (int r = 0; r < world; ++r) {
      if (ok[static_cast<std::size_t>(r)][0] == 0) {
        throw optim::CheckpointError(str("rank ", r, " could not load its checkpoint ",
                                         rank_checkpoint(options.checkpoint_dir, r)));
      }
    }
    record->restore(*model, opt.get(), nullptr, nullptr, {.rank = rank, .world_size = world});
    shuffle.set_state(record->caller().rng);
    first_epoch = static_cast<int>(record->caller().data_position);
    steps = record->caller().step;
    if (report != nullptr) report->on_resume(first_epoch, steps);
  }
  optim::DataParallel dp = optim::DataParallel::initialize(comm, *model, /*root=*/0);

  TrainResult result;
  const auto start = Clock::now();
  const std::int64_t batch = options.batch;
  std::int64_t batches = (train.count + batch - 1) / batch;
  if (options.max_batches_per_epoch >= 0)
    batches = std::min(batches, options.max_batches_per_epoch);
  const std::int64_t report_every =
      options.record_step_losses ? 1 : std::max<std::int64_t>(1, options.report_every);

  for (int epoch = first_epoch; epoch < options.epochs; ++epoch) {
    const std::vector<std::int64_t> order =
        Tensor::randperm(train.count, shuffle).to_vector<std::int64_t>();
    const auto epoch_start = Clock::now();
    double pending_loss = 0.0;  // local loss sum since the last report
    std::int64_t pending_count = 0;
    double epoch_loss = 0.0;  // global, summed at reports
    std::int64_t epoch_samples = 0;
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::int64_t begin = b * batch;
      const std::int64_t size = std::min(batch, train.count - begin);
      const std::int64_t lo = begin + size * rank / world;  // this rank's balanced shard
      const std::int64_t hi = begin + size * (rank + 1) / world;
      optim::GradientsParams grads;
      if (hi > lo) {
        const auto [x, y] = make_batch(train, order, lo, hi);
        model->zero_grad();
        autodiff::Var loss =
            nn::cross_entropy(model->forward(autodiff::Var(x)), y, nn::Reduction::Sum);
        loss.backward();
        pending_loss += static_cast<double>(loss.value().item<float>());
        grads = optim::GradientsParams::from_module(*model);
      }
      pending_count += size;
      const optim::GradientsParams mean =
          dp.reduce(*model, grads, static_cast<double>(hi - lo));  // Σ G_r / Σ w_r
      opt->step(options.lr, *model, mean);
      ++steps;
      if ((b + 1) % report_every == 0 || b + 1 == batches) {
        const double global_loss =
            comm.all_reduce(Tensor::from_vector<double>({pending_loss}), ReduceOperation::Sum)
                .item<double>();
        epoch_loss += global_loss;
        epoch_samples += pending_count;
        if (options.record_step_losses) {
          result.step_losses.push_back(global_loss / static_cast<double>(pending_count));
        }
        pending_loss = 0.0;
        pending_count = 0;
        if (report != nullptr) {
          report->on_progress(epoch + 1, b + 1, batches,
                              epoch_loss / static_cast<double>(epoch_samples),
                              static_cast<double>(epoch_samples) / seconds_since(epoch_start));
        }
      }
    }
    EpochReport er;
    er.epoch = epoch + 1;
    er.steps = steps;
    er.train_seconds = seconds_since(epoch_start);
    er.train_loss = epoch_loss / static_cast<double>(std::max<std::int64_t>(epoch_samples, 1));
    er.samples_per_second = static_cast<double>(epoch_samples) / er.train_seconds;
    if (options.evaluate) er.test_accuracy = evaluate(comm, *model, test);
    if (!options.checkpoint_dir.empty()) {
      optim::TrainingRecord::capture(*model, opt.get(), nullptr, nullptr,
                                     {.step = steps,
                                      .data_position = epoch + 1,
                                      .rng = shuffle.state(),
                                      .rank = rank,
                                      .world_size = world})
          .save(rank_checkpoint(options.checkpoint_dir, rank));
    }
    er.elapsed_seconds = seconds_since(start);
    result.epochs.push_back(er);
    if (report != nullptr) report->on_epoch(er);
  }
  for (const nn::Param& p : model->parameters()) result.parameters.push_back(p.value());
  return result;
}

}  // namespace detail

/// Trains on `options.ranks` threads and returns rank 0's result; rethrows the first rank's
/// exception (the others are aborted, so none waits for a deadline). ValueError for bad options.
inline TrainResult train(const Dataset& train, const Dataset& test, const TrainOptions& options,
                         TrainObserver* observer = nullptr) {
  RUCCL_CHECK(options.ranks >= 1, ValueError, "train: expected --ranks >= 1, got ", options.ranks);
  RUCCL_CHECK(options.batch >= options.ranks, ValueError,
              "train: expected a global batch >= the "
              "number of ranks (",
              options.ranks, "), got ", options.batch);
  RUCCL_CHECK(options.optimizer == "adam" || options.optimizer == "sgd", ValueError,
              "train: expected optimizer 'adam' or 'sgd', got '", options.optimizer, "'");
  RUCCL_CHECK(!options.resume || !options.checkpoint_dir.empty(), ValueError,
              "train: --resume needs --checkpoint-dir");
  RUCCL_CHECK(train.count > 0, ValueError, "train: the training set is empty");
  if (!options.checkpoint_dir.empty() && !options.resume) {
    std::filesystem::create_directories(options.checkpoint_dir);
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu::set_num_threads(options.threads_per_rank > 0
                           ? options.threads_per_rank
                           : std::max(1, static_cast<int>(cores) / options.ranks));
  std::vector<TrainResult> results(static_cast<std::size_t>(options.ranks));
  run_ranks(InProcessGroup::create(options.ranks), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    results[r] = detail::train_rank(comm, train, test, options, observer);
  });
  return results[0];
}

}  // namespace ruccl::examples::fashion_mnist
