#include "optim/classifier_trainer.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <thread>

#include "autodiff/grad_mode.h"
#include "autodiff/nn/fully_shard.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "collective/trace/call_trace.h"
#include "optim/adam.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/checkpoint_series.h"
#include "optim/checkpoint/training_record.h"
#include "optim/data_parallel.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"
#include "optim/zero_checkpoint.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace ruccl::optim {
namespace {

/// Rows `indices[lo, hi)` of `data` as an F32 batch scaled to [0, 1] and I64 labels.
std::pair<Tensor, Tensor> make_batch(const LabelledImages& data,
                                     const std::vector<std::int64_t>& indices, std::int64_t lo,
                                     std::int64_t hi) {
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

/// Puts a model in evaluation mode (BatchNorm's running statistics, no Dropout) for its lifetime,
/// then back in training mode.
class EvalMode {
 public:
  explicit EvalMode(nn::Module& model) : model_(model) { model_.eval(); }
  ~EvalMode() { model_.train(); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  nn::Module& model_;
};

/// Fraction of `data` classified correctly, each rank evaluating its contiguous shard, the model
/// in evaluation mode.
double evaluate(Communicator& comm, nn::Module& model, const LabelledImages& data, bool sharded) {
  autodiff::NoGradGuard no_grad;
  const EvalMode eval_mode(model);
  const int r = comm.rank();
  const int w = comm.world_size();
  const std::int64_t lo = data.count * r / w;
  const std::int64_t hi = data.count * (r + 1) / w;
  std::vector<std::int64_t> identity(static_cast<std::size_t>(data.count));
  for (std::int64_t i = 0; i < data.count; ++i) identity[static_cast<std::size_t>(i)] = i;
  std::int64_t correct = 0;
  constexpr std::int64_t kChunk = 1000;
  // A sharded model's forward is a collective: every rank runs as many as the largest shard needs
  // (a rank past its own end forwards one sample and ignores it).
  const std::int64_t most = (data.count + w - 1) / w;
  const std::int64_t forwards = sharded ? (most + kChunk - 1) / kChunk : 0;
  for (std::int64_t k = 0, start = lo; start < hi || k < forwards; ++k, start += kChunk) {
    const bool mine = start < hi;
    const std::int64_t first = mine ? start : 0;
    const std::int64_t last = mine ? std::min(hi, start + kChunk) : 1;
    const auto [hx, hy] = make_batch(data, identity, first, last);
    const Tensor x = hx.to(comm.device());
    const Tensor y = hy.to(comm.device());
    const Tensor predicted = argmax(model.forward(autodiff::Var(x)).value(), 1);
    if (mine) correct += sum(eq(predicted, y)).to(Device::cpu()).item<std::int64_t>();
  }
  const Tensor totals = comm.all_reduce(
      Tensor::from_vector<std::int64_t>({correct, hi - lo}, comm.device()), ReduceOperation::Sum);
  const std::vector<std::int64_t> t = totals.to(Device::cpu()).to_vector<std::int64_t>();
  return t[1] > 0 ? static_cast<double>(t[0]) / static_cast<double>(t[1]) : 0.0;
}

/// Ends this process at once with SIGKILL (the kill_after_step test hook).
[[noreturn]] void kill_self() {
  std::raise(SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
}

/// Waits until `path` exists (a file renamed into place is complete), at most 60 s.
void wait_for_file(const std::filesystem::path& path) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::error_code ec;
  while (!std::filesystem::exists(path, ec) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// The sharded checkpoint of step `step` under --zero (beside the step's records).
std::filesystem::path zero_checkpoint_dir(const std::filesystem::path& dir, std::int64_t step) {
  return dir / str("zero-step", step);
}

/// Removes the sharded checkpoints of steps before `keep` (all of them for -1).
void remove_zero_checkpoints(const std::filesystem::path& dir, std::int64_t keep) {
  std::error_code ignored;
  for (const auto& e : std::filesystem::directory_iterator(dir, ignored)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("zero-step", 0) != 0) continue;
    const std::int64_t step = std::atoll(name.c_str() + 9);
    if (keep < 0 || step < keep) std::filesystem::remove_all(e.path(), ignored);
  }
}

/// The checks train_classifier() and train_classifier_rank() share. ValueError for bad options.
void check_options(const LabelledImages& train, const ModelFactory& make_model,
                   const TrainOptions& options, int ranks) {
  RUCCL_CHECK(ranks >= 1, ValueError, "train: expected --ranks >= 1, got ", ranks);
  RUCCL_CHECK(options.batch >= ranks, ValueError,
              "train: expected a global batch >= the number of ranks (", ranks, "), got ",
              options.batch);
  RUCCL_CHECK(options.optimizer == "adam" || options.optimizer == "sgd", ValueError,
              "train: expected optimizer 'adam' or 'sgd', got '", options.optimizer, "'");
  RUCCL_CHECK(!(options.resume || options.resume_if_any) || !options.checkpoint_dir.empty(),
              ValueError, "train: --resume needs --checkpoint-dir");
  RUCCL_CHECK(options.accumulate >= 1, ValueError, "train: expected --accumulate >= 1, got ",
              options.accumulate);
  RUCCL_CHECK(options.checkpoint_every >= 0, ValueError,
              "train: expected --checkpoint-every >= 0, got ", options.checkpoint_every);
  RUCCL_CHECK(train.count > 0, ValueError, "train: the training set is empty");
  RUCCL_CHECK(static_cast<bool>(make_model), ValueError,
              "train: expected a model factory, got an empty one");
  RUCCL_CHECK(!options.fsdp || (options.zero_stage == 0 && !options.overlap &&
                                options.accumulate == 1 && options.checkpoint_dir.empty()),
              ValueError,
              "train: expected --fsdp without --zero, --overlap, --accumulate and checkpoints, "
              "got one of them");
}

/// Shards each layer of a Sequential model (or the whole model) with nn::fully_shard; returns
/// the model to train.
std::shared_ptr<nn::Module> shard_model(Communicator& comm, std::shared_ptr<nn::Module> model,
                                        const std::shared_ptr<nn::ShardedParams>& shards) {
  auto* seq = dynamic_cast<nn::Sequential*>(model.get());
  if (seq == nullptr) return nn::fully_shard(model, comm, "model", shards);
  std::vector<std::shared_ptr<nn::Module>> layers;
  for (const auto& [name, child] : seq->named_children()) {
    layers.push_back(child->parameters().empty()
                         ? child
                         : std::shared_ptr<nn::Module>(nn::fully_shard(child, comm, name, shards)));
  }
  return std::make_shared<nn::Sequential>(layers);
}

/// CPU seconds of this process (all threads) or of the calling thread.
double cpu_now(bool whole_process) {
  timespec t{};
  clock_gettime(whole_process ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// One rank's whole training run.
TrainResult train_rank(Communicator& comm, const LabelledImages& train, const LabelledImages& test,
                       const ModelFactory& make_model, const TrainOptions& options,
                       TrainObserver* observer) {
  const int rank = comm.rank();
  const int world = comm.world_size();
  TrainObserver* report = rank == 0 ? observer : nullptr;
  std::shared_ptr<nn::Module> model = make_model();
  RUCCL_CHECK(model != nullptr, ValueError, "train: the model factory returned no model");
  if (!comm.device().is_cpu()) model->to(comm.device());  // made on the host: same values
  std::unique_ptr<Optimizer> opt;
  if (options.optimizer == "sgd") {
    opt = std::make_unique<Sgd>(SgdOptions{.momentum = 0.9});
  } else {
    opt = std::make_unique<Adam>();
  }
  Generator shuffle(options.seed + 1);  // the same stream on every rank
  std::int64_t steps = 0;
  const std::int64_t batch = options.batch;
  std::int64_t batches = (train.count + batch - 1) / batch;
  if (options.max_batches_per_epoch >= 0) {
    batches = std::min(batches, options.max_batches_per_epoch);
  }
  batches = std::max<std::int64_t>(batches, 1);

  std::optional<CheckpointSeries> series;
  if (!options.checkpoint_dir.empty()) {
    std::filesystem::create_directories(options.checkpoint_dir);
    series.emplace(options.checkpoint_dir, rank, world);
  }
  bool resume_zero = false;
  if (series && (options.resume || options.resume_if_any)) {
    // Every rank verifies its files; the ranks resume from the newest step all of them hold.
    std::int64_t newest_anywhere = -1;
    std::optional<TrainingRecord> record = series->load_newest_common(comm, &newest_anywhere);
    if (!record && options.resume) {
      throw CheckpointError(str("resume: ", options.checkpoint_dir,
                                " holds no checkpoint that every rank wrote and verified"));
    }
    if (record) {
      // Under --zero the optimizer state is in the step's sharded checkpoint (loaded below).
      resume_zero = !record->has_optimizer();
      record->restore(*model, resume_zero ? nullptr : opt.get(), nullptr, nullptr,
                      {.rank = rank, .world_size = world});
      shuffle.set_state(record->caller().rng);  // as it was before this epoch's permutation
      steps = record->caller().step;
      if (report != nullptr) {
        report->on_resume(static_cast<int>(steps / batches), steps,
                          newest_anywhere > steps ? newest_anywhere : -1);
      }
    }
  } else if (series) {
    series->remove_own();  // a fresh run: no file of an earlier run may be taken for ours
    if (rank == 0) remove_zero_checkpoints(options.checkpoint_dir, -1);
  }
  DataParallel dp = DataParallel::initialize(comm, *model, /*root=*/0,
                                             {.overlap = options.overlap,
                                              .bucket_cap_bytes = options.bucket_cap_bytes,
                                              .zero_stage = options.zero_stage});
  if (resume_zero)
    load_zero_checkpoint(dp, zero_checkpoint_dir(options.checkpoint_dir, steps), *opt, *model);

  std::shared_ptr<nn::ShardedParams> shards;  // --fsdp: after the broadcast of the start
  if (options.fsdp) {
    shards = nn::ShardedParams::create(comm);
    model = shard_model(comm, model, shards);
  }

  TrainResult result;
  const auto start = Clock::now();
  const std::int64_t report_every =
      options.record_step_losses ? 1 : std::max<std::int64_t>(1, options.report_every);

  for (int epoch = static_cast<int>(steps / batches); epoch < options.epochs; ++epoch) {
    const Generator::State epoch_rng = shuffle.state();  // what a mid-epoch checkpoint records
    const std::vector<std::int64_t> order =
        Tensor::randperm(train.count, shuffle).to_vector<std::int64_t>();
    const auto epoch_start = Clock::now();
    const double epoch_cpu_start = cpu_now(options.rank_is_process);
    double pending_loss = 0.0;  // local loss sum since the last report
    std::int64_t pending_count = 0;
    double epoch_loss = 0.0;  // global, summed at reports
    std::int64_t epoch_samples = 0;
    const std::int64_t first_batch = steps % batches;  // > 0 in an epoch resumed mid-way
    for (std::int64_t b = first_batch; b < batches; ++b) {
      const std::int64_t begin = b * batch;
      const std::int64_t size = std::min(batch, train.count - begin);
      const std::int64_t lo = begin + size * rank / world;  // this rank's balanced shard
      const std::int64_t hi = begin + size * (rank + 1) / world;
      // The step's phases on the trace's training track (free unless tracing is on).
      std::optional<TraceSpan> step_span(std::in_place, comm.trace(), "step", steps + 1);
      // The step's micro-batches: this rank's shard in options.accumulate balanced pieces. Each
      // but the last is folded by no_sync (nothing communicated); the last one's backward (with
      // overlap, inside dp.backward) reduces the whole window once.
      const int micro = options.accumulate;
      GradientsParams mean;  // Σ G_r / Σ w_r
      GradientShard shard;   // ZeRO-2: this rank's elements of it
      model->zero_grad();
      for (int k = 0; k < micro; ++k) {
        const std::int64_t mlo = lo + (hi - lo) * k / micro;
        const std::int64_t mhi = lo + (hi - lo) * (k + 1) / micro;
        const bool last = k + 1 == micro;
        autodiff::Var loss;  // undefined for an empty micro-batch
        if (mhi > mlo) {
          const auto [hx, hy] = make_batch(train, order, mlo, mhi);
          const Tensor x = hx.to(comm.device());
          const Tensor y = hy.to(comm.device());
          std::optional<TraceSpan> phase(std::in_place, comm.trace(), "forward");
          loss = nn::cross_entropy(model->forward(autodiff::Var(x)), y, nn::Reduction::Sum);
          phase.reset();
          pending_loss += static_cast<double>(loss.value().to(Device::cpu()).item<float>());
        }
        const auto weight = static_cast<double>(mhi - mlo);
        if (!last) {
          const TraceSpan phase(comm.trace(), "backward");
          dp.no_sync(*model, loss, weight, LossReduction::Sum);
        } else if (options.fsdp) {
          // The shards' gradients: Σ_r G_r / Σ w_r, as DataParallel::reduce (Sum losses).
          shards->set_gradient_weight(1.0, static_cast<double>(size));
          const TraceSpan phase(comm.trace(), "backward");
          loss.backward();
          mean = GradientsParams::from_module(*model);
        } else if (options.zero_stage == 2) {
          shard = dp.backward_shard(*model, loss, weight, LossReduction::Sum);
        } else if (options.overlap || micro > 1) {
          mean = dp.backward(*model, loss, weight, LossReduction::Sum);  // traced by DataParallel
        } else {
          GradientsParams grads;
          if (loss.defined()) {
            const TraceSpan phase(comm.trace(), "backward");
            loss.backward();
            grads = GradientsParams::from_module(*model);
          }
          mean = dp.reduce(*model, grads, weight, LossReduction::Sum);
        }
      }
      pending_count += size;
      {
        const TraceSpan phase(comm.trace(), "optimizer");
        const double lr = options.cosine_lr
                              ? CosineAnnealingLr(options.lr, batches * options.epochs).lr_at(steps)
                              : options.lr;
        if (options.fsdp) {
          opt->step(lr, *model, mean);  // each rank steps its shards
        } else if (options.zero_stage == 2) {
          dp.step(*opt, lr, *model, shard);
        } else {
          dp.step(*opt, lr, *model, mean);  // ZeRO-1: this rank's shard, then the gather
        }
      }
      step_span.reset();
      ++steps;
      const bool epoch_end = b + 1 == batches;
      const bool checkpoint =
          series &&
          (epoch_end || (options.checkpoint_every > 0 && steps % options.checkpoint_every == 0));
      // ZeRO: every rank writes its shard of the optimizer state into the step's sharded
      // checkpoint (a collective, so before the test hook below lets one rank die); the step's
      // records then hold no optimizer state.
      const bool sharded = checkpoint && options.zero_stage > 0;
      if (sharded) {
        save_zero_checkpoint(dp, zero_checkpoint_dir(options.checkpoint_dir, steps), *opt, *model,
                             {.step = steps});
      }
      if (steps == options.kill_after_step && rank == options.kill_rank && options.attempt == 0) {
        // The test hook: no unwinding, no goodbye, like kill -9. At a checkpoint step, first
        // let rank 0 finish its file (a checkpoint that only some ranks wrote).
        if (checkpoint && rank != 0) wait_for_file(series->path(0, steps));
        kill_self();
      }
      if (checkpoint) {
        series->save(comm,
                     TrainingRecord::capture(
                         *model, sharded ? nullptr : opt.get(), nullptr, nullptr,
                         {.step = steps,
                          .data_position = steps,  // batches consumed: epoch * batches + batch
                          .rng = epoch_end ? shuffle.state() : epoch_rng,
                          .rank = rank,
                          .world_size = world}),
                     steps);
        // Every rank holds this step now: the older sharded checkpoints go.
        if (sharded && rank == 0) remove_zero_checkpoints(options.checkpoint_dir, steps);
      }
      if ((b + 1) % report_every == 0 || epoch_end) {
        const double global_loss =
            comm.all_reduce(Tensor::from_vector<double>({pending_loss}, comm.device()),
                            ReduceOperation::Sum)
                .to(Device::cpu())
                .item<double>();
        epoch_loss += global_loss;
        epoch_samples += pending_count;
        if (options.record_step_losses) {
          result.step_losses.push_back(global_loss / static_cast<double>(pending_count));
        }
        pending_loss = 0.0;
        pending_count = 0;
        if (report != nullptr) {
          const double seconds = seconds_since(epoch_start);
          report->on_progress(
              ProgressReport{.epoch = epoch + 1,
                             .epochs = options.epochs,
                             .batch = b + 1,
                             .batches = batches,
                             .first_batch = first_batch,
                             .loss = epoch_loss / static_cast<double>(epoch_samples),
                             .samples_per_second = static_cast<double>(epoch_samples) / seconds,
                             .epoch_seconds = seconds});
        }
      }
    }
    EpochReport er;
    er.epoch = epoch + 1;
    er.steps = steps;
    er.train_seconds = seconds_since(epoch_start);
    er.cpu_seconds =
        comm.all_reduce(Tensor::from_vector<double>(
                            {cpu_now(options.rank_is_process) - epoch_cpu_start}, comm.device()),
                        ReduceOperation::Sum)
            .to(Device::cpu())
            .item<double>();
    er.train_loss = epoch_loss / static_cast<double>(std::max<std::int64_t>(epoch_samples, 1));
    er.samples_per_second = static_cast<double>(epoch_samples) / er.train_seconds;
    if (options.evaluate) er.test_accuracy = evaluate(comm, *model, test, options.fsdp);
    er.elapsed_seconds = seconds_since(start);
    result.epochs.push_back(er);
    if (report != nullptr) report->on_epoch(er);
  }
  for (const nn::Param& p : model->parameters()) {
    if (!shards) {
      result.parameters.push_back(p.value());
      continue;
    }
    const Shape full = shards->full_shape(p);  // gather the shards, cut the padding
    const std::int64_t rows = full.size() == 0 ? 1 : full[0];
    result.parameters.push_back(comm.all_gather(p.value()).narrow(0, 0, rows).reshape(full));
  }
  return result;
}

}  // namespace

TrainResult train_classifier(const LabelledImages& train, const LabelledImages& test,
                             const ModelFactory& make_model, const TrainOptions& options,
                             TrainObserver* observer) {
  check_options(train, make_model, options, options.ranks);
  RUCCL_CHECK(options.kill_after_step < 0, ValueError,
              "train: --kill-after-step needs ranks that are processes (ruccl-run), got threads");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu::set_num_threads(options.threads_per_rank > 0
                           ? options.threads_per_rank
                           : std::max(1, static_cast<int>(cores) / options.ranks));
  std::vector<TrainResult> results(static_cast<std::size_t>(options.ranks));
  const std::vector<Device> devices(static_cast<std::size_t>(options.ranks), options.device);
  run_ranks(InProcessGroup::create(options.ranks, devices), [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    results[r] = train_rank(comm, train, test, make_model, options, observer);
  });
  return results[0];
}

TrainResult train_classifier_rank(Communicator& comm, const LabelledImages& train,
                                  const LabelledImages& test, const ModelFactory& make_model,
                                  const TrainOptions& options, TrainObserver* observer,
                                  int local_ranks) {
  check_options(train, make_model, options, comm.world_size());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu::set_num_threads(options.threads_per_rank > 0
                           ? options.threads_per_rank
                           : std::max(1, static_cast<int>(cores) / std::max(1, local_ranks)));
  TrainOptions o = options;
  o.rank_is_process = true;
  return train_rank(comm, train, test, make_model, o, observer);
}

}  // namespace ruccl::optim
