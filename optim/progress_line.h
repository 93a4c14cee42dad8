#pragma once
// The progress of a training run within an epoch, as a line for people. On a terminal one line
// redrawn in place (carriage return, erase to the end of the line); otherwise -- a CI log, a
// file, a pipe -- plain lines, at most one per tenth of an epoch, so logs stay short and readable:
//
//   terminal: epoch  1/10 [#########.....................]  141/469  loss 0.5123  45210 samples/s
//             ETA 9s (run 1m42s)
//   log:      epoch 1/10  batch 141/469  loss 0.5123  45210 samples/s  ETA 9s (run 1m42s)
//
// ETA is the rest of this epoch at its pace so far; "run" adds the epochs still to come.
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

namespace ruccl::optim {

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
std::string format_duration(double seconds);

/// Seconds left in the epoch, and in the run, at the epoch's pace so far.
std::pair<double, double> eta_seconds(const ProgressReport& r);

/// The line's text, without a line ending (terminal: with the bar).
std::string format_progress(const ProgressReport& r, bool terminal);

/// Prints progress reports to `out`: redrawn in place on a terminal, plain throttled lines
/// otherwise (see the file comment).
///
///   ProgressPrinter progress(std::cout, isatty(STDOUT_FILENO) != 0);
///   progress.progress(report);  // after some batches
///   progress.clear();           // before printing anything else
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

  /// Draws `r` (terminal), or prints it when the epoch has crossed another tenth (never for the
  /// epoch's last batch: the caller's epoch line follows at once).
  void progress(const ProgressReport& r);
  /// Before any other output: clears a line drawn in place.
  void clear();

 private:
  std::ostream& out_;
  bool terminal_;
  bool drawn_ = false;
  int epoch_ = -1;
  std::int64_t tenth_ = 0;
};

}  // namespace ruccl::optim
