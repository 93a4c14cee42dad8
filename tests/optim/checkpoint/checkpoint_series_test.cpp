// CheckpointSeries: each rank's step files, the agreement after save, and the newest step EVERY
// rank holds and verified after a restart (a step only some ranks wrote, or one damaged on one
// rank, is never used).
#include <catch2/catch.hpp>

#include <fstream>

#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/checkpoint_series.h"
#include "optim/checkpoint/training_record.h"
#include "tests/optim/scratch_dir.h"
#include "tests/optim/tiny_models.h"

using namespace ruccl;
using ruccl::optim::CheckpointSeries;
using ruccl::optim::TrainingRecord;
using ruccl::optim::test_support::make_linear;
using ruccl::optim::test_support::ScratchDir;

namespace {

constexpr int kWorld = 2;

/// Rank `rank`'s record of `step`: a Linear whose weights depend on the rank and the step.
TrainingRecord record_of(int rank, std::int64_t step, int world = kWorld) {
  auto model = make_linear(3, 2, static_cast<std::uint64_t>(100 * rank + step));
  return TrainingRecord::capture(*model, nullptr, nullptr, nullptr,
                                 {.step = step, .rank = rank, .world_size = world});
}

/// Writes rank r's file of `step` directly (what a rank that died before the agreement leaves).
void write_alone(const CheckpointSeries& series, int rank, std::int64_t step) {
  record_of(rank, step).save(series.path(rank, step));
}

struct Found {
  std::optional<std::int64_t> step;  // the chosen record's step
  std::int64_t newest_anywhere = -2;
  std::string error;
};

/// load_newest_common on every rank of an in-process group of `world` ranks.
std::vector<Found> resume_all(const std::filesystem::path& dir, int world = kWorld) {
  std::vector<Found> found(static_cast<std::size_t>(world));
  run_ranks(InProcessGroup::create(world), [&](Communicator& comm) {
    Found& f = found[static_cast<std::size_t>(comm.rank())];
    try {
      const CheckpointSeries series(dir, comm.rank(), world);
      const auto record = series.load_newest_common(comm, &f.newest_anywhere);
      if (record) {
        f.step = record->caller().step;
        // The record is this rank's own: the value it was written with.
        auto expected = make_linear(3, 2, static_cast<std::uint64_t>(100 * comm.rank() + *f.step));
        auto restored = make_linear(3, 2, 999);
        record->restore(*restored, nullptr, nullptr, nullptr,
                        {.rank = comm.rank(), .world_size = world});
        if (restored->weight().value().to_vector<float>() !=
            expected->weight().value().to_vector<float>()) {
          f.error = "restored the wrong record";
        }
      }
    } catch (const optim::CheckpointError& e) {
      f.error = e.what();
    }
  });
  return found;
}

}  // namespace

TEST_CASE("save keeps only the newest agreed step of each rank and ignores foreign names",
          "[optim][checkpoint]") {
  ScratchDir dir;
  run_ranks(InProcessGroup::create(kWorld), [&](Communicator& comm) {
    const CheckpointSeries series(dir.path(), comm.rank(), kWorld);
    for (std::int64_t step : {5, 10, 15}) series.save(comm, record_of(comm.rank(), step), step);
  });
  for (const char* other : {"rank0.ckpt", "rank0-step010.ckpt", "rank0-step-1.ckpt",
                            "rank0-step7.ckpt.tmp", "rank0-stepx.ckpt", "rank10-step3.ckpt"}) {
    std::ofstream(dir / other) << "x";
  }
  const CheckpointSeries series0(dir.path(), 0, kWorld);
  CHECK(series0.listed_steps() == std::vector<std::int64_t>{15});
  CHECK(CheckpointSeries(dir.path(), 1, kWorld).listed_steps() == std::vector<std::int64_t>{15});
  CHECK(series0.path(1, 15) == dir / "rank1-step15.ckpt");
  const auto found = resume_all(dir.path());
  for (const Found& f : found) {
    CHECK(f.error.empty());
    CHECK(f.step == 15);
    CHECK(f.newest_anywhere == 15);
  }
  CHECK(std::filesystem::exists(dir / "rank0.ckpt"));  // not a file of the series: left alone
}

TEST_CASE("a step only one rank wrote is passed over and deleted on resume",
          "[optim][checkpoint]") {
  ScratchDir dir;
  run_ranks(InProcessGroup::create(kWorld), [&](Communicator& comm) {
    const CheckpointSeries series(dir.path(), comm.rank(), kWorld);
    series.save(comm, record_of(comm.rank(), 10), 10);
  });
  // Rank 0 wrote step 15, then rank 1 died before writing it.
  write_alone(CheckpointSeries(dir.path(), 0, kWorld), 0, 15);
  const auto found = resume_all(dir.path());
  for (const Found& f : found) {
    INFO(f.error);
    CHECK(f.error.empty());
    CHECK(f.step == 10);
    CHECK(f.newest_anywhere == 15);
  }
  CHECK_FALSE(std::filesystem::exists(dir / "rank0-step15.ckpt"));
  CHECK(std::filesystem::exists(dir / "rank0-step10.ckpt"));
}

TEST_CASE("a file damaged on one rank makes every rank fall back to an older common step",
          "[optim][checkpoint]") {
  ScratchDir dir;
  for (int r = 0; r < kWorld; ++r) {
    const CheckpointSeries series(dir.path(), r, kWorld);
    for (std::int64_t step : {4, 8}) write_alone(series, r, step);
  }
  {  // flip one byte in the middle of rank 1's newest file
    std::fstream f(dir / "rank1-step8.ckpt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(40);
    const char c = static_cast<char>(f.get());
    f.seekp(40);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  const auto found = resume_all(dir.path());
  for (const Found& f : found) {
    INFO(f.error);
    CHECK(f.error.empty());
    CHECK(f.step == 4);
    CHECK(f.newest_anywhere == 8);
  }
}

TEST_CASE("no common step means a fresh start on every rank", "[optim][checkpoint]") {
  ScratchDir dir;
  SECTION("no folder") {
    for (const Found& f : resume_all(dir / "missing")) {
      CHECK(f.error.empty());
      CHECK_FALSE(f.step.has_value());
      CHECK(f.newest_anywhere == -1);
    }
  }
  SECTION("only rank 0 wrote anything") {
    write_alone(CheckpointSeries(dir.path(), 0, kWorld), 0, 5);
    for (const Found& f : resume_all(dir.path())) {
      CHECK(f.error.empty());
      CHECK_FALSE(f.step.has_value());
      CHECK(f.newest_anywhere == 5);
    }
    CHECK_FALSE(std::filesystem::exists(dir / "rank0-step5.ckpt"));
  }
}

TEST_CASE("files of a run with another world size are refused on every rank",
          "[optim][checkpoint]") {
  ScratchDir dir;
  run_ranks(InProcessGroup::create(kWorld), [&](Communicator& comm) {
    CheckpointSeries(dir.path(), comm.rank(), kWorld).save(comm, record_of(comm.rank(), 3), 3);
  });
  const auto found = resume_all(dir.path(), 3);
  for (const Found& f : found) {
    CHECK_THAT(f.error, Catch::Contains("rank 0: ") && Catch::Contains("rank 1: ") &&
                            Catch::Contains("written by a run with 2 ranks, this run has 3") &&
                            Catch::Contains("resume with 2 ranks"));
  }
}

TEST_CASE("a rank that cannot write its step fails save on every rank and keeps the older files",
          "[optim][checkpoint]") {
  ScratchDir dir;
  std::vector<std::string> errors(kWorld);
  run_ranks(InProcessGroup::create(kWorld), [&](Communicator& comm) {
    const CheckpointSeries series(dir.path(), comm.rank(), kWorld);
    series.save(comm, record_of(comm.rank(), 1), 1);
    // Rank 1 hands over a record of the wrong step.
    const std::int64_t recorded = comm.rank() == 1 ? 7 : 2;
    try {
      series.save(comm, record_of(comm.rank(), recorded), 2);
    } catch (const optim::CheckpointError& e) {
      errors[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  for (const std::string& e : errors) {
    CHECK_THAT(e, Catch::Contains("step 2 was not written by every rank") &&
                      Catch::Contains("rank 1: expected a record of step 2, rank 1 of 2, got "
                                      "step 7"));
  }
  CHECK(std::filesystem::exists(dir / "rank0-step1.ckpt"));  // no agreement: nothing pruned
  CHECK(std::filesystem::exists(dir / "rank1-step1.ckpt"));
  CHECK_THROWS_AS(CheckpointSeries(dir.path(), 2, 2), ValueError);
}
