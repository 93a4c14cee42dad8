#pragma once
// The progress of train_fashion_mnist within an epoch. On a terminal one line redrawn in place
// (carriage return, erase to the end of the line); otherwise -- a CI log, a file, a pipe -- plain
// lines, at most one per tenth of an epoch, so logs stay short and readable:
//
//   terminal: epoch  1/10 [#########.....................]  141/469  loss 0.5123  45210 samples/s
//   ETA 9s (run 1m42s) log:      epoch 1/10  batch 141/469  loss 0.5123  45210 samples/s  ETA 9s
//   (run 1m42s)
//
// ETA is the rest of this epoch at its pace so far; "run" adds the epochs still to come.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>

namespace ruccl::examples::fashion_mnist {

/// Where training stands, as rank 0 reports it after a batch.
struct ProgressReport {
  int epoch = 1;                 ///< 1-based
  int epochs = 1;                ///< the run's last epoch (1-based)
  std::int64_t batch = 0;        ///< batches done in this epoch (1-based count)
  std::int64_t batches = 1;      ///< batches per epoch
  std::int64_t first_batch = 0;  ///< the batch this epoch started at (a resumed epoch: > 0)
  double loss = 0.0;             ///< mean loss of the epoch so far
  double samples_per_second = 0.0;
  double epoch_seconds = 0.0;  ///< since this epoch (or its resumed part) started
};

/// "42s", "3m07s", "2h05m"; "?" for a negative or non-finite value.
inline std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  }
  return buf;
}

/// Seconds left in the epoch, and in the run, at the epoch's pace so far.
inline std::pair<double, double> eta_seconds(const ProgressReport& r) {
  const double done = static_cast<double>(std::max<std::int64_t>(r.batch - r.first_batch, 1));
  const double per_batch = r.epoch_seconds / done;
  const double epoch_left = per_batch * static_cast<double>(r.batches - r.batch);
  const double run_left =
      epoch_left + per_batch * static_cast<double>(r.batches) * (r.epochs - r.epoch);
  return {epoch_left, run_left};
}

/// The line's text, without a line ending (terminal: with the bar).
inline std::string format_progress(const ProgressReport& r, bool terminal) {
  const auto [epoch_left, run_left] = eta_seconds(r);
  char head[96];
  if (terminal) {
    constexpr int kWidth = 30;
    const auto filled = static_cast<int>(kWidth * r.batch / std::max<std::int64_t>(r.batches, 1));
    std::snprintf(head, sizeof head, "epoch %2d/%d [%s%s] %4lld/%lld", r.epoch, r.epochs,
                  std::string(static_cast<std::size_t>(filled), '#').c_str(),
                  std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(),
                  static_cast<long long>(r.batch), static_cast<long long>(r.batches));
  } else {
    std::snprintf(head, sizeof head, "epoch %d/%d  batch %lld/%lld", r.epoch, r.epochs,
                  static_cast<long long>(r.batch), static_cast<long long>(r.batches));
  }
  char tail[128];
  std::snprintf(tail, sizeof tail, "  loss %.4f  %.0f samples/s  ETA %s (run %s)", r.loss,
                r.samples_per_second, format_duration(epoch_left).c_str(),
                format_duration(run_left).c_str());
  return std::string(head) + tail;
}

/// Prints progress reports to `out`: redrawn in place on a terminal, plain throttled lines
/// otherwise (see the file comment).
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

  void progress(const ProgressReport& r) {
    if (terminal_) {
      out_ << "\r" << format_progress(r, true) << "\x1b[K" << std::flush;
      drawn_ = true;
      return;
    }
    // A plain line when the epoch crosses a tenth, never for its last batch (the epoch line
    // follows at once).
    const std::int64_t tenth = 10 * r.batch / std::max<std::int64_t>(r.batches, 1);
    if (r.epoch != epoch_) {
      epoch_ = r.epoch;
      tenth_ = 10 * r.first_batch / std::max<std::int64_t>(r.batches, 1);
    }
    if (tenth <= tenth_ || r.batch >= r.batches) return;
    tenth_ = tenth;
    out_ << format_progress(r, false) << "\n" << std::flush;
  }
  /// Before any other output: clears a line drawn in place.
  void clear() {
    if (!drawn_) return;
    out_ << "\r\x1b[K";
    drawn_ = false;
  }

 private:
  std::ostream& out_;
  bool terminal_;
  bool drawn_ = false;
  int epoch_ = -1;
  std::int64_t tenth_ = 0;
};

}  // namespace ruccl::examples::fashion_mnist
