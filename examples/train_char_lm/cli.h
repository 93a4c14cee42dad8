#pragma once
// train_char_lm's command line.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "examples/train_char_lm/char_corpus.h"

namespace ruccl::examples::char_lm {

inline constexpr const char* kUsage =
    "usage: train_char_lm [options]\n"
    "  --ranks N             ranks (threads), default 2 (or T x D); under a launcher\n"
    "                        (ruccl-run, torchrun, srun, mpirun) every rank is a process\n"
    "  --tp T                tensor-parallel ranks per replica (mesh {dp: D, tp: T}), default 1\n"
    "  --dp D                data-parallel replicas, default ranks / T\n"
    "  --dtype f32|f64       parameters' and activations' dtype, default f32\n"
    "  --overlap             all-reduce gradient buckets along dp while backward runs\n"
    "  --bucket-mb X         with --overlap: the bucket cap in MiB, default 25\n"
    "  --zero-stage 0|1|2    ZeRO along dp: shard the optimizer state (1) and gradients (2)\n"
    "  --steps N             optimizer steps, default 1500\n"
    "  --batch N             global batch of sequences (split over the ranks), default 16\n"
    "  --context N           characters per sequence, default 64\n"
    "  --embed N --heads N --layers N   model size, default 64, 4, 2\n"
    "  --untied              a head of its own instead of the token embedding's transpose\n"
    "  --lr X                peak learning rate (linear warm-up, cosine decay), default 0.002\n"
    "  --warmup N            warm-up steps, default 100\n"
    "  --weight-decay X      AdamW's decoupled weight decay, default 0.01\n"
    "  --seed N              initialisation and batch seed, default 0\n"
    "  --threads N           CPU threads per rank, default cores / ranks\n"
    "  --data DIR            the fortune files, default /usr/share/games/fortunes\n"
    "  --eval-every N        validation loss every N steps, default 250\n"
    "  --eval-batches N      validation batches, default 8\n"
    "  --checkpoint-dir DIR  save every rank's TrainingRecord (at the end and every N steps)\n"
    "  --sharded-checkpoint  save a ShardedCheckpoint instead (always with --tp > 1): it\n"
    "                        resumes on any mesh\n"
    "  --checkpoint-every N  also every N steps (default 0: at the end only)\n"
    "  --resume              continue from the newest checkpoint every rank holds\n"
    "  --stop-after K        stop after step K (a checkpoint is saved there)\n"
    "  --sample N            characters to sample at the end, default 300\n"
    "  --temperature X       sampling temperature, default 0.8\n"
    "  --print-losses        print every step's training loss (all digits)\n"
    "  --save-parameters F   write the final parameters, whole (gathered), to F as text\n";

/// Everything the command line sets.
struct Options {
  int ranks = 2;
  bool ranks_given = false;
  std::int64_t steps = 1500;
  std::int64_t batch = 16;
  std::int64_t context = 64;
  std::int64_t embed = 64;
  std::int64_t heads = 4;
  std::int64_t layers = 2;
  bool untied = false;
  double lr = 2e-3;
  std::int64_t warmup = 100;
  double weight_decay = 0.01;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string data_dir = kDefaultDataDir;
  std::int64_t eval_every = 250;
  std::int64_t eval_batches = 8;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;
  bool resume = false;
  std::int64_t stop_after = 0;
  std::int64_t sample_chars = 300;
  double temperature = 0.8;
  int tp = 1;
  int dp = 0;  ///< 0: ranks / tp
  bool f64 = false;
  bool print_losses = false;
  bool sharded_checkpoint = false;
  bool overlap = false;
  std::int64_t bucket_cap_bytes = 25LL << 20;
  int zero_stage = 0;
  std::string save_parameters;
};

[[noreturn]] inline void usage_error(const std::string& message) {
  std::cerr << "train_char_lm: " << message << "\n" << kUsage;
  std::exit(2);
}

inline double to_number(const std::string& flag, const std::string& text, bool integer) {
  try {
    std::size_t used = 0;
    const double v =
        integer ? static_cast<double>(std::stoll(text, &used)) : std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  usage_error(flag + " expects " + (integer ? "an integer" : "a number") + ", got '" + text + "'");
}

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (flag == "--resume" || flag == "--untied" || flag == "--print-losses" ||
        flag == "--sharded-checkpoint" || flag == "--overlap") {
      (flag == "--resume"         ? o.resume
       : flag == "--untied"       ? o.untied
       : flag == "--print-losses" ? o.print_losses
       : flag == "--overlap"      ? o.overlap
                                  : o.sharded_checkpoint) = true;
      continue;
    }
    if (i + 1 >= argc) usage_error("missing value after " + flag);
    const std::string v = argv[++i];
    auto integer = [&] { return static_cast<std::int64_t>(to_number(flag, v, true)); };
    if (flag == "--ranks") {
      o.ranks = static_cast<int>(integer());
      o.ranks_given = true;
    } else if (flag == "--steps") {
      o.steps = integer();
    } else if (flag == "--batch") {
      o.batch = integer();
    } else if (flag == "--context") {
      o.context = integer();
    } else if (flag == "--embed") {
      o.embed = integer();
    } else if (flag == "--heads") {
      o.heads = integer();
    } else if (flag == "--layers") {
      o.layers = integer();
    } else if (flag == "--lr") {
      o.lr = to_number(flag, v, false);
    } else if (flag == "--warmup") {
      o.warmup = integer();
    } else if (flag == "--weight-decay") {
      o.weight_decay = to_number(flag, v, false);
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(integer());
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(integer());
    } else if (flag == "--data") {
      o.data_dir = v;
    } else if (flag == "--eval-every") {
      o.eval_every = integer();
    } else if (flag == "--eval-batches") {
      o.eval_batches = integer();
    } else if (flag == "--checkpoint-dir") {
      o.checkpoint_dir = v;
    } else if (flag == "--checkpoint-every") {
      o.checkpoint_every = integer();
    } else if (flag == "--stop-after") {
      o.stop_after = integer();
    } else if (flag == "--sample") {
      o.sample_chars = integer();
    } else if (flag == "--temperature") {
      o.temperature = to_number(flag, v, false);
    } else if (flag == "--tp") {
      o.tp = static_cast<int>(integer());
    } else if (flag == "--dp") {
      o.dp = static_cast<int>(integer());
    } else if (flag == "--dtype") {
      if (v != "f32" && v != "f64") usage_error("--dtype expects f32 or f64, got '" + v + "'");
      o.f64 = v == "f64";
    } else if (flag == "--zero-stage") {
      o.zero_stage = static_cast<int>(integer());
      if (o.zero_stage < 0 || o.zero_stage > 2) usage_error("--zero-stage expects 0, 1 or 2");
    } else if (flag == "--bucket-mb") {
      const double mb = to_number(flag, v, false);
      if (!(mb > 0.0 && mb <= 1 << 20)) usage_error("--bucket-mb expects a size > 0 in MiB");
      o.bucket_cap_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(mb * (1 << 20)));
    } else if (flag == "--save-parameters") {
      o.save_parameters = v;
    } else {
      usage_error("unknown option " + flag);
    }
  }
  if (o.ranks < 1 || o.steps < 1 || o.batch < 1 || o.context < 1 || o.layers < 0 ||
      o.eval_every < 1 || o.eval_batches < 1 || o.warmup < 0 || o.checkpoint_every < 0) {
    usage_error(
        "--ranks, --steps, --batch, --context, --eval-every and --eval-batches must be "
        ">= 1; --layers, --warmup and --checkpoint-every >= 0");
  }
  if (o.temperature <= 0) usage_error("--temperature must be > 0");
  if (o.tp < 1 || o.dp < 0) usage_error("--tp and --dp must be >= 1");
  if (o.dp > 0 && o.ranks_given && o.ranks != o.tp * o.dp) {
    usage_error("--ranks " + std::to_string(o.ranks) + " but --tp x --dp is " +
                std::to_string(o.tp * o.dp));
  }
  if (o.dp > 0) o.ranks = o.tp * o.dp;
  if (o.dp == 0 && !o.ranks_given && o.tp > 1) o.ranks = o.tp;  // --tp T alone: one replica
  if (o.resume && o.checkpoint_dir.empty()) usage_error("--resume needs --checkpoint-dir");
  if (o.stop_after > 0 && o.checkpoint_dir.empty())
    usage_error("--stop-after needs --checkpoint-dir");
  return o;
}

}  // namespace ruccl::examples::char_lm
