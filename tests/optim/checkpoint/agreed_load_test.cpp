// load_on_every_rank: every rank loads its own record, and a missing, damaged or misplaced file
// on one rank is a CheckpointError on every rank, promptly (no rank waits for a deadline).
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "optim/checkpoint/agreed_load.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "tests/optim/scratch_dir.h"
#include "tests/optim/tiny_models.h"

using namespace ruccl;
using Catch::Contains;
using ruccl::optim::TrainingRecord;
using ruccl::optim::test_support::make_linear;
using ruccl::optim::test_support::ScratchDir;

namespace {

constexpr int kWorld = 2;

std::filesystem::path file_of(const ScratchDir& dir, int rank) {
  return dir / ("rank" + std::to_string(rank) + ".ckpt");
}

/// Each rank's record: a Linear whose weights depend on the rank, saved as rank<r>.ckpt.
void save_all(const ScratchDir& dir) {
  for (int r = 0; r < kWorld; ++r) {
    auto model = make_linear(3, 2, static_cast<std::uint64_t>(100 + r));
    TrainingRecord::capture(*model, nullptr, nullptr, nullptr,
                            {.step = 1, .rank = r, .world_size = kWorld})
        .save(file_of(dir, r));
  }
}

/// load_on_every_rank on every rank: each rank's error message, empty when it loaded its record
/// (checked against the weights it was saved with).
std::vector<std::string> load_all(const ScratchDir& dir) {
  std::vector<std::string> errors(kWorld);
  run_ranks(InProcessGroup::create(kWorld), [&](Communicator& comm) {
    std::string& error = errors[static_cast<std::size_t>(comm.rank())];
    try {
      const TrainingRecord record = optim::load_on_every_rank(comm, file_of(dir, comm.rank()));
      auto restored = make_linear(3, 2, 999);
      record.restore(*restored, nullptr, nullptr, nullptr,
                     {.rank = comm.rank(), .world_size = kWorld});
      auto expected = make_linear(3, 2, static_cast<std::uint64_t>(100 + comm.rank()));
      if (restored->weight().value().to_vector<float>() !=
          expected->weight().value().to_vector<float>()) {
        error = "restored the wrong record";
      }
    } catch (const optim::CheckpointError& e) {
      error = e.what();
    }
  });
  return errors;
}

}  // namespace

TEST_CASE("load_on_every_rank gives every rank its own record", "[optim][checkpoint]") {
  ScratchDir dir;
  save_all(dir);
  const auto errors = load_all(dir);
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());
}

TEST_CASE("load_on_every_rank fails on every rank promptly when one rank's file is bad",
          "[optim][checkpoint]") {
  ScratchDir dir;
  save_all(dir);
  const auto start = std::chrono::steady_clock::now();
  SECTION("one rank's file is missing") {
    std::filesystem::remove(file_of(dir, 1));
    const auto errors = load_all(dir);
    CHECK_THAT(errors[0], Contains("rank 1 could not load") && Contains("rank1.ckpt") &&
                              Contains("no rank resumes"));
    CHECK_THAT(errors[1], Contains("rank1.ckpt"));
  }
  SECTION("rank 0's file is damaged") {
    std::fstream f(file_of(dir, 0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char byte = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(byte ^ 0x01));
    f.close();
    const auto errors = load_all(dir);
    CHECK_THAT(errors[0], Contains("rank0.ckpt") && Contains("corrupted"));
    CHECK_THAT(errors[1], Contains("rank 0 could not load") && Contains("rank0.ckpt"));
  }
  SECTION("the two ranks' files are swapped") {
    const auto tmp = dir / "swap.ckpt";
    std::filesystem::rename(file_of(dir, 0), tmp);
    std::filesystem::rename(file_of(dir, 1), file_of(dir, 0));
    std::filesystem::rename(tmp, file_of(dir, 1));
    const auto errors = load_all(dir);
    for (const std::string& e : errors) {
      CHECK_THAT(e, Contains("expected world size 2 rank ") &&
                        Contains("(the record's), got world size 2 rank "));
    }
  }
  // No rank waited for a deadline (the default is 300 s).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}
