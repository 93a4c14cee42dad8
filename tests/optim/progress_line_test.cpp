// The progress of training within an epoch (optim/progress_line.h): a line redrawn in place on a
// terminal, plain throttled lines otherwise, both with samples/s, loss and ETA.
#include <catch2/catch.hpp>

#include <sstream>

#include "optim/progress_line.h"

namespace optim = ruccl::optim;

namespace {

optim::ProgressReport at_batch(std::int64_t batch) {
  // 100 batches per epoch, 0.1 s each: ETA is (100 - batch) * 0.1 s, the run adds 2 epochs.
  return optim::ProgressReport{.epoch = 1,
                               .epochs = 3,
                               .batch = batch,
                               .batches = 100,
                               .first_batch = 0,
                               .loss = 0.51234,
                               .samples_per_second = 45210.4,
                               .epoch_seconds = 0.1 * static_cast<double>(batch)};
}

}  // namespace

TEST_CASE("Durations print as seconds minutes or hours", "[optim][progress]") {
  CHECK(optim::format_duration(0.4) == "0s");
  CHECK(optim::format_duration(42) == "42s");
  CHECK(optim::format_duration(187) == "3m07s");
  CHECK(optim::format_duration(7500) == "2h05m");
  CHECK(optim::format_duration(-1) == "?");
}

TEST_CASE("A plain progress line has the epoch batch loss samples per second and ETA",
          "[optim][progress]") {
  CHECK(optim::format_progress(at_batch(40), false) ==
        "epoch 1/3  batch 40/100  loss 0.5123  45210 samples/s  ETA 6s (run 26s)");
}

TEST_CASE("A terminal progress line carries a bar", "[optim][progress]") {
  CHECK(optim::format_progress(at_batch(40), true) ==
        "epoch  1/3 [############..................]   40/100  loss 0.5123  45210 samples/s  "
        "ETA 6s (run 26s)");
}

TEST_CASE("On a terminal every report redraws one line in place", "[optim][progress]") {
  std::ostringstream out;
  optim::ProgressPrinter printer(out, true);
  printer.progress(at_batch(1));
  printer.progress(at_batch(2));
  printer.clear();
  const std::string text = out.str();
  CHECK(text.find('\n') == std::string::npos);
  // Appended piece by piece: g++ 12 warns (-Wstringop-overflow, a false positive) on
  // "\r" + a string it cannot size.
  std::string expected = "\r";
  expected += optim::format_progress(at_batch(1), true);
  expected += "\x1b[K\r";
  expected += optim::format_progress(at_batch(2), true);
  expected += "\x1b[K\r\x1b[K";
  CHECK(text == expected);
}

TEST_CASE("Off a terminal progress is plain lines at most one per tenth of an epoch",
          "[optim][progress]") {
  std::ostringstream out;
  optim::ProgressPrinter printer(out, false);
  for (std::int64_t b = 1; b <= 100; ++b) printer.progress(at_batch(b));
  printer.clear();  // nothing to clear: no control characters off a terminal
  const std::string text = out.str();
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  std::string expected;
  for (std::int64_t b = 10; b < 100; b += 10) {
    expected += optim::format_progress(at_batch(b), false) + "\n";
  }
  CHECK(text == expected);  // batches 10, 20, ..., 90; the last one is the epoch line's
}

TEST_CASE("A resumed epoch's ETA counts only the batches run since it resumed",
          "[optim][progress]") {
  optim::ProgressReport r = at_batch(60);
  r.first_batch = 50;  // resumed at batch 50: 10 batches in 1 s
  r.epoch_seconds = 1.0;
  CHECK(optim::format_progress(r, false) ==
        "epoch 1/3  batch 60/100  loss 0.5123  45210 samples/s  ETA 4s (run 24s)");
  std::ostringstream out;
  optim::ProgressPrinter printer(out, false);
  printer.progress(r);  // the 60 % mark is the first tenth crossed since the resume
  CHECK(out.str() == optim::format_progress(r, false) + "\n");
}
