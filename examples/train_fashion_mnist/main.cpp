// train_fashion_mnist: an MLP trained data-parallel on Fashion-MNIST over N in-process ranks.
//
//   train_fashion_mnist [--ranks 2] [--epochs 10] [--batch 128] [--lr 0.001] [--optimizer adam]
//                       [--hidden 512,512] [--seed 0] [--data DIR] [--metrics FILE]
//                       [--checkpoint-dir DIR] [--resume] [--threads N]
//
// Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*-idx?-ubyte.gz).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "examples/train_fashion_mnist/data_parallel_trainer.h"

namespace fm = ruccl::examples::fashion_mnist;

namespace {

constexpr const char* kUsage =
    "usage: train_fashion_mnist [options]\n"
    "  --ranks N            data-parallel ranks (threads), default 2\n"
    "  --epochs N           epochs, default 10\n"
    "  --batch N            global batch size (split over the ranks), default 128\n"
    "  --lr X               learning rate, default 0.001\n"
    "  --optimizer NAME     adam (default) or sgd (momentum 0.9)\n"
    "  --hidden A,B,...     hidden layer sizes, default 512,512\n"
    "  --seed N             initialisation and shuffling seed, default 0\n"
    "  --threads N          CPU threads per rank, default cores / ranks\n"
    "  --data DIR           the four *-idx?-ubyte.gz files, default "
    "/usr/share/datasets/fashion-mnist\n"
    "  --metrics FILE       write a CSV line per epoch\n"
    "  --checkpoint-dir DIR save every rank's TrainingRecord after each epoch\n"
    "  --resume             continue from --checkpoint-dir\n";

struct Cli {
  fm::TrainOptions options;
  std::string data_dir = fm::kDefaultDataDir;
  std::string metrics;
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
    if (i + 1 >= argc) usage_error("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--ranks") {
      cli.options.ranks = static_cast<int>(to_int(flag, value));
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
    } else if (flag == "--optimizer") {
      cli.options.optimizer = value;
    } else if (flag == "--hidden") {
      cli.options.hidden.clear();
      std::stringstream parts(value);
      for (std::string part; std::getline(parts, part, ',');) {
        cli.options.hidden.push_back(to_int(flag, part));
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
  for (std::int64_t h : cli.options.hidden) {
    if (h < 1) usage_error("--hidden sizes must be >= 1");
  }
  if (cli.options.resume && cli.options.checkpoint_dir.empty()) {
    usage_error("--resume needs --checkpoint-dir");
  }
  return cli;
}

/// Prints a progress bar (redrawn in place on a terminal) and a line per epoch; writes the CSV.
class ConsoleObserver : public fm::TrainObserver {
 public:
  ConsoleObserver(const std::string& metrics_path, bool append) : tty_(isatty(STDOUT_FILENO) != 0) {
    if (!metrics_path.empty()) {
      const bool fresh = !append || !std::filesystem::exists(metrics_path);
      csv_.open(metrics_path, append ? std::ios::app : std::ios::trunc);
      if (!csv_) throw std::runtime_error("cannot write the metrics file " + metrics_path);
      if (fresh)
        csv_ << "epoch,step,train_loss,test_accuracy,epoch_seconds,samples_per_second,"
                "elapsed_seconds\n";
    }
  }
  void on_resume(int epochs_done, std::int64_t steps) override {
    std::cout << "resuming after epoch " << epochs_done << " (step " << steps << ")\n";
  }
  void on_progress(int epoch, std::int64_t batch, std::int64_t batches, double loss,
                   double samples_per_second) override {
    if (!tty_) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * batch / std::max<std::int64_t>(batches, 1));
    std::cout << "\repoch " << std::setw(2) << epoch << " [" << std::string(filled, '#')
              << std::string(kWidth - filled, '.') << "] " << std::setw(4) << batch << "/"
              << batches << " loss " << std::fixed << std::setprecision(4) << loss << "  "
              << std::setprecision(0) << samples_per_second << " samples/s   " << std::flush;
  }
  void on_epoch(const fm::EpochReport& r) override {
    if (tty_) std::cout << "\r" << std::string(100, ' ') << "\r";
    std::cout << "epoch " << std::setw(2) << r.epoch << "  step " << std::setw(5) << r.steps
              << "  loss " << std::fixed << std::setprecision(4) << r.train_loss;
    if (r.test_accuracy >= 0) {
      std::cout << "  test accuracy " << std::setprecision(2) << 100.0 * r.test_accuracy << "%";
    }
    std::cout << "  " << std::setprecision(0) << r.samples_per_second << " samples/s  "
              << std::setprecision(1) << r.elapsed_seconds << " s" << std::endl;
    if (csv_.is_open()) {
      csv_ << r.epoch << "," << r.steps << "," << std::fixed << std::setprecision(6) << r.train_loss
           << "," << std::setprecision(4) << r.test_accuracy << "," << std::setprecision(3)
           << r.train_seconds << "," << std::setprecision(0) << r.samples_per_second << ","
           << std::setprecision(3) << r.elapsed_seconds << std::endl;
    }
  }

 private:
  bool tty_;
  std::ofstream csv_;
};

}  // namespace

int main(int argc, char** argv) {
  const Cli cli = parse(argc, argv);
  try {
    const auto load_start = std::chrono::steady_clock::now();
    const fm::Dataset train = fm::read_split(cli.data_dir, "train");
    const fm::Dataset test = fm::read_split(cli.data_dir, "t10k");
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    const auto& o = cli.options;
    std::cout << "Fashion-MNIST: " << train.count << " training and " << test.count
              << " test images (loaded in " << std::fixed << std::setprecision(1) << load_seconds
              << " s)\nMLP " << train.features;
    for (std::int64_t h : o.hidden) std::cout << "-" << h;
    std::cout << "-" << train.classes << ", " << o.optimizer << " lr " << std::defaultfloat << o.lr
              << ", global batch " << o.batch << " over " << o.ranks << " data-parallel rank(s), "
              << o.epochs << " epochs\n";
    ConsoleObserver observer(cli.metrics, o.resume);
    const fm::TrainResult result = fm::train(train, test, o, &observer);
    if (!result.epochs.empty()) {
      const auto& last = result.epochs.back();
      std::cout << "done: test accuracy " << std::fixed << std::setprecision(2)
                << 100.0 * last.test_accuracy << "% after " << last.epoch << " epochs, "
                << std::setprecision(1) << last.elapsed_seconds << " s of training\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "train_fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
