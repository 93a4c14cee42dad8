// train_char_lm: a small GPT trained character by character on Debian's fortunes, data-parallel
// over N ranks: threads of this process, or -- started by ruccl-run, torchrun, srun or mpirun --
// one process per rank. Checkpoints resume bit for bit; the end samples text from the model.
//
//   train_char_lm [--ranks 2] [--steps 1500] [--batch 16] [--context 64] [--embed 64]
//                 [--heads 4] [--layers 2] [--lr 0.002] [--seed 0] [--data DIR] [--threads N]
//                 [--checkpoint-dir DIR] [--checkpoint-every N] [--resume] [--stop-after K]
//   ruccl-run --nproc-per-node 2 train_char_lm [options]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "collective/common/hash.h"
#include "collective/in_process_group.h"
#include "collective/launch/launch_env.h"
#include "collective/mesh.h"
#include "collective/run_ranks.h"
#include "collective/tcp_group.h"
#include "examples/train_char_lm/char_corpus.h"
#include "examples/train_char_lm/cli.h"
#include "examples/train_char_lm/gpt.h"
#include "examples/train_char_lm/sharded_state.h"
#include "examples/train_char_lm/tp_gpt.h"
#include "optim/optim.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace lm = ruccl::examples::char_lm;
using namespace ruccl;
using autodiff::Var;

namespace {

using Clock = std::chrono::steady_clock;

// Sequences [lo, hi) of a batch whose sequence i starts at starts[i]: inputs and next chars.
std::pair<Tensor, Tensor> make_batch(const std::vector<std::int64_t>& text,
                                     const std::vector<std::int64_t>& starts, std::int64_t lo,
                                     std::int64_t hi, std::int64_t t_len) {
  std::vector<std::int64_t> x, y;
  for (std::int64_t i = lo; i < hi; ++i) {
    const auto s = static_cast<std::size_t>(starts[static_cast<std::size_t>(i)]);
    x.insert(x.end(), text.begin() + static_cast<std::ptrdiff_t>(s),
             text.begin() + static_cast<std::ptrdiff_t>(s) + t_len);
    y.insert(y.end(), text.begin() + static_cast<std::ptrdiff_t>(s) + 1,
             text.begin() + static_cast<std::ptrdiff_t>(s) + 1 + t_len);
  }
  return {Tensor::from_vector(x, {hi - lo, t_len}), Tensor::from_vector(y, {(hi - lo) * t_len})};
}

// What the loop asks of a model, for the one-rank lm::Gpt and the tensor-parallel lm::TpGpt:
// the summed cross-entropy of a batch (replicated over tp), the whole logits (on every rank of
// the tp group), and the whole parameters by path in visit order (a collective of tp).
Var summed_loss(lm::Gpt& model, const Tensor& x, const Tensor& y) {
  return nn::cross_entropy(autodiff::reshape(model.forward(x), {-1, model.config().vocab}), y,
                           nn::Reduction::Sum);
}
Var summed_loss(lm::TpGpt& model, const Tensor& x, const Tensor& y) { return model.loss_sum(x, y); }
Tensor whole_logits(lm::Gpt& model, const Tensor& x) { return model.forward(x).value(); }
Tensor whole_logits(lm::TpGpt& model, const Tensor& x) { return model.full_logits(x); }
std::vector<std::pair<std::string, Tensor>> whole_parameters(lm::Gpt& model) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [path, p] : model.named_parameters()) out.emplace_back(path, p.value());
  return out;
}
std::vector<std::pair<std::string, Tensor>> whole_parameters(lm::TpGpt& model) {
  return model.consolidated();
}
lm::ShardLayout layout_of(lm::Gpt& model) {
  return {0, 1, model.config().vocab, model.config().vocab};
}
lm::ShardLayout layout_of(lm::TpGpt& model) { return model.layout(); }

// The summed cross-entropy of rows [lo, hi) of a batch.
template <typename Model>
Var batch_loss(Model& model, const std::vector<std::int64_t>& text,
               const std::vector<std::int64_t>& starts, std::int64_t lo, std::int64_t hi,
               std::int64_t t_len) {
  const auto [x, y] = make_batch(text, starts, lo, hi, t_len);
  return summed_loss(model, x, y);
}

// Mean validation loss per character over eval_batches fixed, evenly spaced batches, split over
// the data-parallel ranks `comm`.
template <typename Model>
double validation_loss(Communicator& comm, Model& model, const lm::Corpus& corpus,
                       const lm::Options& o) {
  autodiff::NoGradGuard no_grad;
  const std::int64_t count = o.eval_batches * o.batch;
  const auto span = static_cast<std::int64_t>(corpus.validation.size()) - o.context - 1;
  std::vector<std::int64_t> starts;
  for (std::int64_t i = 0; i < count; ++i) starts.push_back(i * span / count);
  const std::int64_t lo = count * comm.rank() / comm.world_size();
  const std::int64_t hi = count * (comm.rank() + 1) / comm.world_size();
  double sum = 0.0;
  for (std::int64_t b = lo; b < hi; b += o.batch) {
    sum += batch_loss(model, corpus.validation, starts, b, std::min(hi, b + o.batch), o.context)
               .value()
               .template item<double>();
  }
  const double total =
      comm.all_reduce(Tensor::from_vector<double>({sum}), ReduceOperation::Sum).item<double>();
  return total / static_cast<double>(count * o.context);
}

// `n` characters drawn from the model after a newline, at `temperature`: each from the softmax
// of the last position's logits, by a search of the cumulative probabilities.
template <typename Model>
std::string sample(Model& model, const lm::Corpus& corpus, const lm::Options& o, Generator& gen) {
  autodiff::NoGradGuard no_grad;
  const auto newline = std::find(corpus.alphabet.begin(), corpus.alphabet.end(), '\n');
  std::vector<std::int64_t> ids{newline - corpus.alphabet.begin()};
  std::string out;
  for (std::int64_t i = 0; i < o.sample_chars; ++i) {
    const std::int64_t from =
        std::max<std::int64_t>(0, static_cast<std::int64_t>(ids.size()) - o.context);
    std::vector<std::int64_t> window(ids.begin() + from, ids.end());
    const auto len = static_cast<std::int64_t>(window.size());
    Tensor logits = whole_logits(model, Tensor::from_vector(window, {1, len}));
    Tensor last = logits.select(1, len - 1).reshape({-1});
    const std::vector<double> p =
        ruccl::softmax(ruccl::div(last, o.temperature), 0).to(DType::F64).to_vector<double>();
    const double u = gen.next_double();
    double cumulative = 0.0;
    std::size_t pick = p.size() - 1;
    for (std::size_t c = 0; c < p.size(); ++c) {
      cumulative += p[c];
      if (u < cumulative) {
        pick = c;
        break;
      }
    }
    ids.push_back(static_cast<std::int64_t>(pick));
    out.push_back(static_cast<char>(corpus.alphabet[pick]));
  }
  return out;
}

struct RankResult {
  std::vector<std::pair<std::string, Tensor>> parameters;  ///< whole, by path, in visit order
  std::vector<std::pair<std::int64_t, double>> losses;     ///< (step, loss) (--print-losses)
  double validation = 0.0;
  double seconds = 0.0;
  std::int64_t steps = 0;
  std::string sample;
};

// Trains `model` (its data-parallel replicas talk over `dp`, a group of `comm`, the world).
template <typename Model>
RankResult train(Communicator& comm, Communicator& dp_comm, Model& model, const lm::Corpus& corpus,
                 const lm::Options& o) {
  const int rank = comm.rank();
  const int world = comm.world_size();
  const bool lead = rank == 0;
  if (o.f64) model.to(DType::F64);
  optim::AdamW opt({.weight_decay = o.weight_decay});
  optim::WarmupCosineLr schedule(o.lr, o.warmup, o.steps);
  Generator data(o.seed + 1);  // the batches' start offsets: the same stream on every rank
  std::int64_t step = 0;
  std::optional<optim::CheckpointSeries> series;    // per-rank records (one-rank model only)
  bool sharded = o.tp > 1 || o.sharded_checkpoint;  // or a ShardedCheckpoint (any mesh)
  if (!o.checkpoint_dir.empty()) {
    std::filesystem::create_directories(o.checkpoint_dir);
    const std::optional<std::int64_t> newest =
        o.resume ? lm::newest_sharded_step(comm, o.checkpoint_dir) : std::nullopt;
    sharded = sharded || newest.has_value();
    if (!sharded) series.emplace(o.checkpoint_dir, rank, world);
    if (o.resume && sharded) {
      if (!newest) {
        throw optim::CheckpointError(
            str("--resume: ", o.checkpoint_dir, " holds no whole sharded checkpoint"));
      }
      const optim::CallerState caller = lm::load_sharded_state(
          comm, o.checkpoint_dir, *newest, model, layout_of(model), opt, schedule);
      data.set_state(caller.rng);
      step = caller.step;
      if (lead) std::cout << "resuming after step " << step << " (sharded)\n";
    } else if (o.resume) {
      std::optional<optim::TrainingRecord> record = series->load_newest_common(comm);
      if (!record) {
        throw optim::CheckpointError(
            str("--resume: ", o.checkpoint_dir, " holds no checkpoint that every rank wrote"));
      }
      record->restore(model, &opt, &schedule, nullptr, {.rank = rank, .world_size = world});
      data.set_state(record->caller().rng);
      step = record->caller().step;
      if (lead) std::cout << "resuming after step " << step << "\n";
    } else if (series) {
      series->remove_own();
    } else {
      lm::remove_sharded_states(comm, o.checkpoint_dir);
    }
  }
  optim::DataParallel dp = optim::DataParallel::initialize(
      dp_comm, model, /*root=*/0,
      {.overlap = o.overlap,
       .bucket_cap_bytes = o.bucket_cap_bytes,
       .first_bucket_cap_bytes = std::min<std::int64_t>(1 << 20, o.bucket_cap_bytes),
       .zero_stage = o.zero_stage});
  const auto span =
      static_cast<std::uint64_t>(corpus.train.size()) - static_cast<std::uint64_t>(o.context) - 1;
  const std::int64_t lo = o.batch * dp_comm.rank() / dp_comm.world_size();        // this replica's
  const std::int64_t hi = o.batch * (dp_comm.rank() + 1) / dp_comm.world_size();  // sequences
  RankResult r;
  const std::int64_t last = o.stop_after > 0 ? std::min(o.stop_after, o.steps) : o.steps;
  const auto start = Clock::now();
  double pending = 0.0;  // this rank's loss sum since the last report
  std::int64_t pending_steps = 0;
  while (step < last) {
    std::vector<std::int64_t> starts;
    for (std::int64_t i = 0; i < o.batch; ++i) {
      starts.push_back(static_cast<std::int64_t>(data.next_below(span)));
    }
    double step_loss = 0.0;
    model.zero_grad();
    Var loss;  // undefined on a replica with no rows
    if (hi > lo) {
      loss = batch_loss(model, corpus.train, starts, lo, hi, o.context);
      step_loss = loss.value().template item<double>();
    }
    // The gradient of the mean over the global batch: backward, then dp's all-reduce (with
    // --overlap, bucket by bucket while backward runs; with ZeRO-2, only this rank's shard of it;
    // every way bit-identical), and the step (with ZeRO, of this rank's shard, then gathered).
    const double weight = static_cast<double>((hi - lo) * o.context);
    if (o.zero_stage == 2) {
      dp.step(opt, schedule.step(), model,
              dp.backward_shard(model, loss, weight, optim::LossReduction::Sum));
    } else {
      dp.step(opt, schedule.step(), model,
              dp.backward(model, loss, weight, optim::LossReduction::Sum));
    }
    pending += step_loss;
    if (o.print_losses) {
      r.losses.emplace_back(step + 1, dp_comm.all_reduce(Tensor::from_vector<double>({step_loss}),
                                                         ReduceOperation::Sum)
                                              .item<double>() /
                                          static_cast<double>(o.batch * o.context));
    }
    ++step;
    ++pending_steps;
    if (!o.checkpoint_dir.empty() &&
        (step == last || (o.checkpoint_every > 0 && step % o.checkpoint_every == 0))) {
      const optim::CallerState caller{.step = step,
                                      .data_position = step,
                                      .rng = data.state(),
                                      .rank = rank,
                                      .world_size = world};
      dp.gather_optimizer_state(opt, model);  // ZeRO: the whole state on every dp rank
      if (series) {
        series->save(comm, optim::TrainingRecord::capture(model, &opt, &schedule, nullptr, caller),
                     step);
      } else {
        lm::save_sharded_state(comm, o.checkpoint_dir, step, model,
                               {layout_of(model), dp_comm.rank() == 0}, opt, schedule, caller);
      }
    }
    if (step % o.eval_every == 0 || step == last) {
      const double train =
          dp_comm.all_reduce(Tensor::from_vector<double>({pending}), ReduceOperation::Sum)
              .item<double>() /
          static_cast<double>(pending_steps * o.batch * o.context);
      const double val = validation_loss(dp_comm, model, corpus, o);
      pending = 0.0;
      pending_steps = 0;
      if (lead) {
        std::cout << "step " << std::setw(5) << step << "  train loss " << std::fixed
                  << std::setprecision(4) << train << "  validation loss " << val << "  "
                  << std::setprecision(1)
                  << std::chrono::duration<double>(Clock::now() - start).count() << " s"
                  << std::defaultfloat << std::endl;
      }
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.steps = step;
  r.validation = validation_loss(dp_comm, model, corpus, o);
  r.parameters = whole_parameters(model);
  if (dp_comm.rank() == 0 && o.sample_chars > 0) {  // the tp group of rank 0 samples
    Generator gen(o.seed + 2);
    r.sample = sample(model, corpus, o, gen);
  }
  return r;
}

RankResult train_rank(Communicator& comm, const lm::Corpus& corpus, const lm::Options& o) {
  const lm::GptConfig config{.vocab = static_cast<std::int64_t>(corpus.alphabet.size()),
                             .context = o.context,
                             .embed = o.embed,
                             .heads = o.heads,
                             .layers = o.layers,
                             .tie_weights = !o.untied};
  Generator init(o.seed);
  if (o.tp == 1) {  // the one-rank model, data-parallel over every rank
    lm::Gpt model(config, init);
    return train(comm, comm, model, corpus, o);
  }
  Mesh mesh(comm, {{"dp", o.dp}, {"tp", o.tp}});
  lm::TpGpt model(config, mesh.comm("tp"), init);
  return train(comm, mesh.comm("dp"), model, corpus, o);
}

// Writes "path numel v0 v1 ..." per parameter, every value with 17 significant digits.
void save_parameters(const std::string& file,
                     const std::vector<std::pair<std::string, Tensor>>& parameters) {
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (f == nullptr) throw ValueError(str("--save-parameters: cannot write ", file));
  for (const auto& [path, t] : parameters) {
    const std::vector<double> v = t.contiguous().to(DType::F64).to_vector<double>();
    std::fprintf(f, "%s %zu", path.c_str(), v.size());
    for (double x : v) std::fprintf(f, " %.17g", x);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}

// "final parameters: N values, FNV-1a 0x..." of the F32 bytes in visit order.
void print_parameter_hash(const std::vector<std::pair<std::string, Tensor>>& parameters) {
  std::string bytes;
  std::int64_t values = 0;
  for (const auto& [path, p] : parameters) {
    const std::vector<float> v = p.contiguous().to(DType::F32).to_vector<float>();
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    values += static_cast<std::int64_t>(v.size());
  }
  std::cout << "final parameters: " << values << " values, FNV-1a 0x" << std::hex
            << std::setfill('0') << std::setw(16) << fnv1a64(bytes) << std::dec << std::setfill(' ')
            << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  lm::Options o = lm::parse(argc, argv);
  try {
    std::optional<Communicator> comm;
    int local_ranks = 1;
    if (environment_describes_job()) {  // one process per rank, started by a launcher
      if (mpi_engine_from_env()) {
        comm = Communicator::from_env();
      } else {
        const LaunchEnv job = read_launch_env();
        local_ranks = job.local_world_size;
        comm = Communicator::from_env();
      }
      if (o.ranks_given && o.ranks != comm->world_size()) {
        lm::usage_error(str("--ranks ", o.ranks, " but the launcher started ", comm->world_size(),
                            " ranks; leave --ranks out under a launcher"));
      }
      o.ranks = comm->world_size();
    }
    if (o.dp == 0) o.dp = o.ranks / o.tp;
    if (o.ranks != o.tp * o.dp) {
      lm::usage_error(str(o.ranks, " ranks are not --tp ", o.tp, " x --dp ", o.dp));
    }
    if (o.batch < o.dp) lm::usage_error("--batch must be >= the number of data-parallel ranks");
    const lm::Corpus corpus = lm::read_corpus(o.data_dir);
    const bool lead = !comm || comm->rank() == 0;
    if (lead) {
      std::cout << "fortunes: " << corpus.files << " files, " << corpus.bytes << " characters ("
                << corpus.train.size() << " train, " << corpus.validation.size()
                << " validation), vocabulary " << corpus.alphabet.size() << "\nGPT: " << o.layers
                << " layers, embed " << o.embed << ", " << o.heads << " heads, context "
                << o.context << (o.untied ? ", untied head" : ", tied head") << "; AdamW lr "
                << o.lr << ", global batch " << o.batch << " over " << o.ranks << " rank(s) ("
                << (comm ? "processes" : "threads") << "), mesh {dp: " << o.dp << ", tp: " << o.tp
                << "}, " << (o.f64 ? "f64" : "f32") << ", " << o.steps << " steps\n";
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int sharing = comm ? local_ranks : o.ranks;
    cpu::set_num_threads(o.threads > 0 ? o.threads
                                       : std::max(1, static_cast<int>(cores) / sharing));
    RankResult result;
    if (comm) {
      result = train_rank(*comm, corpus, o);
    } else {
      std::vector<RankResult> results(static_cast<std::size_t>(o.ranks));
      run_ranks(InProcessGroup::create(o.ranks), [&](Communicator& c) {
        results[static_cast<std::size_t>(c.rank())] = train_rank(c, corpus, o);
      });
      result = results[0];
    }
    if (lead) {
      std::cout << "done: validation loss " << std::fixed << std::setprecision(4)
                << result.validation << " after " << result.steps << " steps, "
                << std::setprecision(1) << result.seconds << " s\n"
                << std::defaultfloat;
      print_parameter_hash(result.parameters);
      for (const auto& [step, loss] : result.losses) {
        std::printf("loss step %lld %.17g\n", static_cast<long long>(step), loss);
      }
      if (!o.save_parameters.empty()) save_parameters(o.save_parameters, result.parameters);
      if (!result.sample.empty()) std::cout << "sample:\n" << result.sample << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "train_char_lm: " << e.what() << "\n";
    return 1;
  }
}
