// The code path of examples/collective_training (run, resume, refusals) with the exact values of
// docs/training.md. The example binary itself prints the same values.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "examples/collective_training/two_rank_training.h"
#include "tests/optim/scratch_dir.h"

using namespace ruccl;
namespace ct = ruccl::examples::collective_training;
using ruccl::optim::test_support::ScratchDir;

TEST_CASE("collective_training run gives the exact values and resume reproduces step 2",
          "[optim]") {
  ScratchDir scratch;
  const auto dir = scratch / "state";
  const auto run = ct::run_two_ranks(ct::Mode::Run, dir, Device::cpu());
  for (const auto& rank : run) {
    CHECK(rank.after_step1 == ct::Values{0.53125f, 0.0f, 0.40625f});
    CHECK(rank.after_step2 == ct::Values{0.5390625f, 0.15625f, 0.5078125f});
  }
  CHECK(std::filesystem::exists(ct::checkpoint_path(dir, 0)));
  CHECK(std::filesystem::exists(ct::checkpoint_path(dir, 1)));
  CHECK(ct::format_values(ct::kAfterStep1) == "[0.53125, 0.0, 0.40625]");
  CHECK(ct::format_values(ct::kAfterStep2) == "[0.5390625, 0.15625, 0.5078125]");

  const auto resumed = ct::run_two_ranks(ct::Mode::Resume, dir, Device::cpu());
  for (const auto& rank : resumed) {
    CHECK(rank.after_step1 == ct::kAfterStep1);
    CHECK(rank.after_step2 == ct::kAfterStep2);
  }
  // run refuses the existing directory and leaves it alone.
  CHECK_THROWS_WITH(ct::run_two_ranks(ct::Mode::Run, dir, Device::cpu()),
                    Catch::Contains("already exists"));
  CHECK(std::filesystem::exists(ct::checkpoint_path(dir, 1)));
}

TEST_CASE(
    "collective_training resume fails promptly on every rank when a file is missing or "
    "damaged",
    "[optim]") {
  ScratchDir scratch;
  const auto dir = scratch / "state";
  ct::run_two_ranks(ct::Mode::Run, dir, Device::cpu());
  const auto start = std::chrono::steady_clock::now();
  SECTION("one rank's file is missing") {
    std::filesystem::remove(ct::checkpoint_path(dir, 1));
    CHECK_THROWS_WITH(ct::run_two_ranks(ct::Mode::Resume, dir, Device::cpu()),
                      Catch::Contains("rank 1 could not load") && Catch::Contains("rank1.ckpt"));
  }
  SECTION("rank 0's file is damaged") {
    std::fstream f(ct::checkpoint_path(dir, 0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char byte = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(byte ^ 0x01));
    f.close();
    CHECK_THROWS_WITH(ct::run_two_ranks(ct::Mode::Resume, dir, Device::cpu()),
                      Catch::Contains("rank0.ckpt") && Catch::Contains("corrupted"));
  }
  SECTION("the two ranks' files are swapped") {
    const auto tmp = scratch / "swap.ckpt";
    std::filesystem::rename(ct::checkpoint_path(dir, 0), tmp);
    std::filesystem::rename(ct::checkpoint_path(dir, 1), ct::checkpoint_path(dir, 0));
    std::filesystem::rename(tmp, ct::checkpoint_path(dir, 1));
    CHECK_THROWS_WITH(ct::run_two_ranks(ct::Mode::Resume, dir, Device::cpu()),
                      Catch::Contains("expected world size 2 rank ") &&
                          Catch::Contains("(the record's), got world size 2 rank "));
  }
  SECTION("the directory does not exist") {
    CHECK_THROWS_WITH(ct::run_two_ranks(ct::Mode::Resume, scratch / "nothing", Device::cpu()),
                      Catch::Contains("does not exist"));
  }
  // No rank waited for a deadline (the default is 300 s).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}
