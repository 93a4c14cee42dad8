#include "optim/progress_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ruccl::optim {

std::string format_duration(double seconds) {
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

std::pair<double, double> eta_seconds(const ProgressReport& r) {
  const double done = static_cast<double>(std::max<std::int64_t>(r.batch - r.first_batch, 1));
  const double per_batch = r.epoch_seconds / done;
  const double epoch_left = per_batch * static_cast<double>(r.batches - r.batch);
  const double run_left =
      epoch_left + per_batch * static_cast<double>(r.batches) * (r.epochs - r.epoch);
  return {epoch_left, run_left};
}

std::string format_progress(const ProgressReport& r, bool terminal) {
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

void ProgressPrinter::progress(const ProgressReport& r) {
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

void ProgressPrinter::clear() {
  if (!drawn_) return;
  out_ << "\r\x1b[K";
  drawn_ = false;
}

}  // namespace ruccl::optim
