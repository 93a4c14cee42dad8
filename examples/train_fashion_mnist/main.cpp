// train_fashion_mnist: an MLP or a small conv net trained data-parallel on Fashion-MNIST over N
// ranks: threads of this process, or -- started by ruccl-run, torchrun, srun or mpirun -- one
// process per rank.
//
//   train_fashion_mnist [--ranks 2] [--epochs 10] [--batch 128] [--lr 0.001] [--cosine-lr]
//                       [--optimizer adam]
//                       [--model mlp|cnn] [--hidden 512,512] [--seed 0] [--data DIR] [--metrics
//                       FILE]
//                       [--checkpoint-dir DIR] [--checkpoint-every N] [--resume] [--threads N]
//                       [--device cpu|cuda]
//   ruccl-run --nproc-per-node 2 [--max-restarts 1] train_fashion_mnist [options]
//
// Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*-idx?-ubyte.gz).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "collective/common/hash.h"
#include "collective/communicator.h"
#include "collective/launch/launch_env.h"
#include "collective/tcp_group.h"
#include "examples/train_fashion_mnist/fashion_mnist.h"
#include "optim/classifier_trainer.h"
#include "ruccl/config.h"
#include "tensor/backend/backend.h"
#if RUCCL_WITH_CUDA
#include "cuda/core/device.h"
#endif

namespace fm = ruccl::examples::fashion_mnist;
namespace optim = ruccl::optim;

namespace {

constexpr const char* kUsage =
    "usage: train_fashion_mnist [options]\n"
    "  --ranks N            data-parallel ranks (threads), default 2; under a launcher\n"
    "                       (ruccl-run, torchrun, srun, mpirun) every rank is a process and\n"
    "                       the world size is the launcher's\n"
    "  --epochs N           epochs, default 10\n"
    "  --batch N            global batch size (split over the ranks), default 128\n"
    "  --lr X               learning rate, default 0.001\n"
    "  --cosine-lr          anneal the learning rate to 0 along a cosine over all steps\n"
    "  --optimizer NAME     adam (default) or sgd (momentum 0.9)\n"
    "  --model mlp|cnn      mlp (default): Linear + ReLU layers; cnn: two blocks of Conv2d\n"
    "                       3x3 + BatchNorm2d + ReLU + MaxPool2d 2 (32, 64 channels), then\n"
    "                       Linear 3136-128-10\n"
    "  --hidden A,B,...     the MLP's hidden layer sizes, default 512,512\n"
    "  --seed N             initialisation and shuffling seed, default 0\n"
    "  --threads N          CPU threads per rank, default cores / ranks\n"
    "  --device cpu|cuda    where the ranks train, default cpu (cuda: GPU 0, or under a\n"
    "                       launcher the GPU of the local rank)\n"
    "  --data DIR           the four *-idx?-ubyte.gz files, default "
    "/usr/share/datasets/fashion-mnist\n"
    "  --metrics FILE       write a CSV line per epoch\n"
    "  --checkpoint-dir DIR save every rank's TrainingRecord after each epoch\n"
    "  --checkpoint-every N also after every N steps (default 0: epoch ends only)\n"
    "  --resume             continue from the newest checkpoint every rank holds in\n"
    "                       --checkpoint-dir (a job restarted by ruccl-run does so by itself)\n"
    "  --max-batches N      at most N batches per epoch (short runs)\n"
    "  --overlap            reduce gradient buckets while backward runs (same parameters)\n"
    "  --bucket-mb X        with --overlap: the bucket cap in MiB, default 25\n"
    "  --accumulate K       K micro-batches per step (DataParallel::no_sync), default 1\n"
    "  --zero S             ZeRO stage: 1 shards the optimizer state, 2 the gradients too\n"
    "                       (same parameters as without), default 0\n"
    "  --fsdp               fully sharded parameters (nn::fully_shard per layer; the same\n"
    "                       parameters as without at 2 ranks)\n"
    "  --test-limit N       evaluate on the first N test images only (short runs)\n"
    "  --save-parameters F  write the final parameters to F (raw F32, visit order)\n"
    "  --kill-after-step K  test hook: rank --kill-rank (default 1) SIGKILLs itself after\n"
    "                       step K, on a job's first attempt only (processes only)\n";

struct Cli {
  optim::TrainOptions options;
  std::string model = "mlp";
  std::vector<std::int64_t> hidden = {512, 512};
  std::string data_dir = fm::kDefaultDataDir;
  std::string metrics;
  std::string save_parameters;
  std::int64_t test_limit = -1;  ///< -1: the whole test set
  bool ranks_given = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "train_fashion_mnist: " << message << "\n" << kUsage;
  std::exit(2);
}

std::int64_t to_int(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  usage_error(flag + " expects an integer, got '" + text + "'");
}

Cli parse(int argc, char** argv) {
  Cli cli;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (flag == "--resume") {
      cli.options.resume = true;
      continue;
    }
    if (flag == "--overlap") {
      cli.options.overlap = true;
      continue;
    }
    if (flag == "--fsdp") {
      cli.options.fsdp = true;
      continue;
    }
    if (flag == "--cosine-lr") {
      cli.options.cosine_lr = true;
      continue;
    }
    if (i + 1 >= argc) usage_error("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--ranks") {
      cli.options.ranks = static_cast<int>(to_int(flag, value));
      cli.ranks_given = true;
    } else if (flag == "--accumulate") {
      const std::int64_t k = to_int(flag, value);
      if (k < 1 || k > 1 << 20) usage_error("--accumulate expects K >= 1, got " + value);
      cli.options.accumulate = static_cast<int>(k);
    } else if (flag == "--zero") {
      const std::int64_t stage = to_int(flag, value);
      if (stage < 0 || stage > 2) usage_error("--zero expects 0, 1 or 2, got " + value);
      cli.options.zero_stage = static_cast<int>(stage);
    } else if (flag == "--epochs") {
      cli.options.epochs = static_cast<int>(to_int(flag, value));
    } else if (flag == "--batch") {
      cli.options.batch = to_int(flag, value);
    } else if (flag == "--lr") {
      try {
        cli.options.lr = std::stod(value);
      } catch (const std::exception&) {
        usage_error("--lr expects a number, got '" + value + "'");
      }
    } else if (flag == "--bucket-mb") {
      double mb = 0.0;
      try {
        mb = std::stod(value);
      } catch (const std::exception&) {
        usage_error("--bucket-mb expects a number, got '" + value + "'");
      }
      if (!(mb > 0.0 && mb <= 1 << 20)) usage_error("--bucket-mb expects a size > 0 in MiB");
      cli.options.bucket_cap_bytes = static_cast<std::int64_t>(mb * (1 << 20));
      if (cli.options.bucket_cap_bytes < 1) usage_error("--bucket-mb is below one byte");
    } else if (flag == "--optimizer") {
      cli.options.optimizer = value;
    } else if (flag == "--model") {
      if (value != "mlp" && value != "cnn")
        usage_error("--model expects mlp or cnn, got '" + value + "'");
      cli.model = value;
    } else if (flag == "--hidden") {
      cli.hidden.clear();
      std::stringstream parts(value);
      for (std::string part; std::getline(parts, part, ',');) {
        cli.hidden.push_back(to_int(flag, part));
      }
    } else if (flag == "--seed") {
      cli.options.seed = static_cast<std::uint64_t>(to_int(flag, value));
    } else if (flag == "--threads") {
      cli.options.threads_per_rank = static_cast<int>(to_int(flag, value));
    } else if (flag == "--data") {
      cli.data_dir = value;
    } else if (flag == "--metrics") {
      cli.metrics = value;
    } else if (flag == "--checkpoint-dir") {
      cli.options.checkpoint_dir = value;
    } else if (flag == "--checkpoint-every") {
      cli.options.checkpoint_every = to_int(flag, value);
    } else if (flag == "--max-batches") {
      cli.options.max_batches_per_epoch = to_int(flag, value);
    } else if (flag == "--test-limit") {
      cli.test_limit = to_int(flag, value);
      if (cli.test_limit < 1) usage_error("--test-limit must be >= 1");
    } else if (flag == "--save-parameters") {
      cli.save_parameters = value;
    } else if (flag == "--device") {
      if (value != "cpu" && value != "cuda")
        usage_error("--device expects cpu or cuda, got '" + value + "'");
      cli.options.device = value == "cuda" ? ruccl::Device::cuda(0) : ruccl::Device::cpu();
    } else if (flag == "--kill-after-step") {
      cli.options.kill_after_step = to_int(flag, value);
    } else if (flag == "--kill-rank") {
      cli.options.kill_rank = static_cast<int>(to_int(flag, value));
    } else {
      usage_error("unknown option " + flag);
    }
  }
  if (cli.options.ranks < 1) usage_error("--ranks must be >= 1");
  if (cli.options.epochs < 1) usage_error("--epochs must be >= 1");
  if (cli.options.batch < cli.options.ranks) usage_error("--batch must be >= --ranks");
  if (cli.options.optimizer != "adam" && cli.options.optimizer != "sgd") {
    usage_error("--optimizer must be adam or sgd");
  }
  for (std::int64_t h : cli.hidden) {
    if (h < 1) usage_error("--hidden sizes must be >= 1");
  }
  if (cli.options.resume && cli.options.checkpoint_dir.empty()) {
    usage_error("--resume needs --checkpoint-dir");
  }
  if (cli.options.checkpoint_every < 0) usage_error("--checkpoint-every must be >= 0");
  if (cli.options.max_batches_per_epoch == 0) usage_error("--max-batches must be >= 1");
  return cli;
}

/// Prints the progress within an epoch (a line redrawn in place on a terminal, plain lines
/// otherwise: optim/progress_line.h) and a line per epoch; writes the CSV.
class ConsoleObserver : public optim::TrainObserver {
 public:
  ConsoleObserver(const std::string& metrics_path, bool append)
      : progress_(std::cout, isatty(STDOUT_FILENO) != 0) {
    if (!metrics_path.empty()) {
      const bool fresh = !append || !std::filesystem::exists(metrics_path);
      csv_.open(metrics_path, append ? std::ios::app : std::ios::trunc);
      if (!csv_) throw std::runtime_error("cannot write the metrics file " + metrics_path);
      if (fresh)
        csv_ << "epoch,step,train_loss,test_accuracy,epoch_seconds,samples_per_second,"
                "elapsed_seconds\n";
    }
  }
  void on_resume(int epochs_done, std::int64_t steps, std::int64_t passed_over) override {
    std::cout << "resuming at step " << steps << " (" << epochs_done
              << " whole epochs) from the newest checkpoint every rank wrote and verified";
    if (passed_over >= 0) {
      std::cout << " (step " << passed_over << " passed over: not every rank wrote it)";
    }
    std::cout << "\n";
  }
  void on_progress(const optim::ProgressReport& r) override { progress_.progress(r); }
  void on_epoch(const optim::EpochReport& r) override {
    progress_.clear();
    std::cout << "epoch " << std::setw(2) << r.epoch << "  step " << std::setw(5) << r.steps
              << "  loss " << std::fixed << std::setprecision(4) << r.train_loss;
    if (r.test_accuracy >= 0) {
      std::cout << "  test accuracy " << std::setprecision(2) << 100.0 * r.test_accuracy << "%";
    }
    std::cout << "  " << std::setprecision(0) << r.samples_per_second << " samples/s  "
              << std::setprecision(1) << r.elapsed_seconds << " s  cpu " << std::setprecision(2)
              << r.cpu_seconds << " s" << std::endl;
    if (csv_.is_open()) {
      csv_ << r.epoch << "," << r.steps << "," << std::fixed << std::setprecision(6) << r.train_loss
           << "," << std::setprecision(4) << r.test_accuracy << "," << std::setprecision(3)
           << r.train_seconds << "," << std::setprecision(0) << r.samples_per_second << ","
           << std::setprecision(3) << r.elapsed_seconds << std::endl;
    }
  }

 private:
  optim::ProgressPrinter progress_;
  std::ofstream csv_;
};

/// The parameters' bytes in visit order: written to `path` (when not empty) and hashed.
std::uint64_t save_parameters(const std::vector<ruccl::Tensor>& parameters,
                              const std::string& path) {
  std::string bytes;
  std::int64_t values = 0;
  for (const ruccl::Tensor& p : parameters) {
    const ruccl::Tensor c = p.contiguous();
    const std::vector<float> v = c.to_vector<float>();
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    values += static_cast<std::int64_t>(v.size());
  }
  if (!path.empty()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write the parameters file " + path);
  }
  const std::uint64_t hash = ruccl::fnv1a64(bytes);
  std::cout << "final parameters: " << values << " values, FNV-1a 0x" << std::hex
            << std::setfill('0') << std::setw(16) << hash << std::dec << std::setfill(' ') << "\n";
  return hash;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli = parse(argc, argv);
  if (cli.options.device.is_cuda()) {
#if RUCCL_WITH_CUDA
    if (!ruccl::cuda::cuda_available() || !ruccl::has_backend(ruccl::DeviceType::CUDA)) {
      std::cerr << "train_fashion_mnist: --device cuda: "
                << (ruccl::cuda::cuda_available() ? std::string("this build has no CUDA backend")
                                                  : ruccl::cuda::device_status())
                << "\n";
      return 1;
    }
#else
    std::cerr << "train_fashion_mnist: --device cuda: this build has no CUDA (configure with "
                 "-DRUCCL_WITH_CUDA=ON)\n";
    return 1;
#endif
  }
  try {
    // Processes when a launcher describes a job, threads of this process otherwise.
    std::optional<ruccl::Communicator> comm;
    std::string launch;  // under a launcher: where this rank sits and what moves its bytes
    int local_ranks = 1;
    if (ruccl::environment_describes_job()) {
      ruccl::LaunchEnv job;
      if (ruccl::mpi_engine_from_env()) {
        // An MPI job (mpirun, srun --mpi=pmix): MPI knows the ranks, there is no rendezvous.
        comm = ruccl::Communicator::from_env();
        job = ruccl::mpi_launch_env(comm->rank(), comm->world_size());
      } else {
        job = ruccl::read_launch_env();
      }
      if (cli.ranks_given && cli.options.ranks != job.world_size) {
        usage_error(ruccl::str("--ranks ", cli.options.ranks, " but the launcher started ",
                               job.world_size, " ranks (", ruccl::describe(job),
                               "); leave --ranks out under a launcher"));
      }
      cli.options.ranks = job.world_size;
      cli.options.attempt = job.restart_count;
      // A restarted job continues from its checkpoints (or starts afresh when there is none).
      cli.options.resume_if_any = job.restart_count > 0 && !cli.options.checkpoint_dir.empty();
      local_ranks = job.local_world_size;
#if RUCCL_WITH_CUDA
      if (cli.options.device.is_cuda()) {  // one GPU per local rank, as far as there are GPUs
        cli.options.device = ruccl::Device::cuda(job.local_rank % ruccl::cuda::device_count());
      }
#endif
      if (!comm) comm = ruccl::Communicator::from_env(cli.options.device);
      launch = ruccl::str(ruccl::describe(job), "; engine ", comm->engine_name());
    } else if (cli.options.kill_after_step >= 0) {
      usage_error("--kill-after-step needs ranks that are processes (start under ruccl-run)");
    }
    const bool lead = !comm || comm->rank() == 0;  // only rank 0 prints
    const auto load_start = std::chrono::steady_clock::now();
    const optim::LabelledImages train = fm::read_split(cli.data_dir, "train");
    optim::LabelledImages test = fm::read_split(cli.data_dir, "t10k");
    if (cli.test_limit > 0 && cli.test_limit < test.count) {  // the first N images
      test.count = cli.test_limit;
      test.pixels.resize(static_cast<std::size_t>(test.count * test.features));
      test.labels.resize(static_cast<std::size_t>(test.count));
    }
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    const auto& o = cli.options;
    if (lead) {
      if (!launch.empty()) std::cout << "launch: " << launch << "\n";
      std::cout << "Fashion-MNIST: " << train.count << " training and " << test.count
                << " test images (loaded in " << std::fixed << std::setprecision(1) << load_seconds
                << " s)";
      if (test.count == cli.test_limit) std::cout << ", evaluating on the first " << test.count;
      std::cout << "\n";
      if (cli.model == "cnn") {
        std::cout << "CNN conv3x3-32 bn pool conv3x3-64 bn pool 3136-128-" << train.classes;
      } else {
        std::cout << "MLP " << train.features;
        for (std::int64_t h : cli.hidden) std::cout << "-" << h;
        std::cout << "-" << train.classes;
      }
      std::cout << ", " << o.optimizer << " lr " << std::defaultfloat << o.lr << ", global batch "
                << o.batch << " over " << o.ranks << " data-parallel rank(s) ("
                << (comm ? "processes" : "threads") << ") on " << o.device.to_string() << ", "
                << o.epochs << " epochs\n";
    }
    std::optional<ConsoleObserver> observer;
    if (lead) observer.emplace(cli.metrics, o.resume || o.resume_if_any);
    // Every rank makes the same model (the seed's values, ParamIds 1, 2, ...).
    const optim::ModelFactory make_model = [&]() -> std::shared_ptr<ruccl::nn::Module> {
      if (cli.model == "cnn") return fm::make_cnn(train.classes, o.seed);
      return fm::make_mlp(train.features, cli.hidden, train.classes, o.seed);
    };
    const optim::TrainResult result =
        comm ? optim::train_classifier_rank(*comm, train, test, make_model, o,
                                            observer ? &*observer : nullptr, local_ranks)
             : optim::train_classifier(train, test, make_model, o, &*observer);
    if (lead) {
      if (!result.epochs.empty()) {
        const auto& last = result.epochs.back();
        std::cout << "done: test accuracy " << std::fixed << std::setprecision(2)
                  << 100.0 * last.test_accuracy << "% after " << last.epoch << " epochs, "
                  << std::setprecision(1) << last.elapsed_seconds << " s of training\n";
      }
      save_parameters(result.parameters, cli.save_parameters);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "train_fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
