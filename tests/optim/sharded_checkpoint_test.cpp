// ShardedCheckpoint: shards saved by W ranks and read back as other shards on W' ranks (4 -> 2 ->
// 1, 2 -> 4), boxes against flat ranges both ways, replicated tensors, consolidation, and every
// error naming the rank and the tensor: a missing, damaged or stale rank file, elements no shard
// covers, a box outside the tensor, a tensor it does not hold, shards one rank got wrong (every
// rank fails), ranks that disagree on a tensor. A new save leaves the old checkpoint whole until
// its manifest lands, then removes the old files.
#include <catch2/catch.hpp>

#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/checkpoint/sharded_checkpoint.h"
#include "tensor/tensor.h"
#include "tests/optim/scratch_dir.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::optim::test_support::ScratchDir;
using ruccl::testing::TensorEqual;

namespace {

/// The tensors of the test: a weight [8, 6] (F32), a flat optimizer state of 30 elements (F64,
/// the shape [5, 6]) and a bias [6] (replicated).
Tensor weight() { return Tensor::arange(0, 48, 1, DType::F32).reshape({8, 6}) * 0.5; }
Tensor state() { return Tensor::arange(0, 30, 1, DType::F64).reshape({5, 6}) * -0.25; }
Tensor bias() { return Tensor::arange(0, 6, 1, DType::F32) + 100.0; }

/// Rank r of W's shards: weight rows (uneven: chunks of 8 over W), the state's flat range, the
/// whole bias.
std::vector<TensorShard> shards_of(int r, int w) {
  const auto chunk = [](std::int64_t n, int w, int r) {  // balanced, the first n % w one longer
    const std::int64_t base = n / w, extra = n % w;
    const std::int64_t begin = r * base + std::min<std::int64_t>(r, extra);
    return std::pair{begin, base + (r < extra ? 1 : 0)};
  };
  const auto [row0, rows] = chunk(8, w, r);
  const auto [flat0, flats] = chunk(30, w, r);
  return {
      {.name = "fc.weight",
       .param_id = 1,
       .global_shape = {8, 6},
       .box = ShardBox::along({8, 6}, 0, row0, rows),
       .value = weight().narrow(0, row0, rows).contiguous()},
      {.name = "exp_avg/fc.weight",
       .global_shape = {5, 6},
       .box = ShardBox::flat_range(flat0, flats),
       .padding = r == w - 1 ? (w - 30 % w) % w : 0,
       .value = state().reshape({30}).narrow(0, flat0, flats).contiguous()},
      {.name = "fc.bias",
       .param_id = 2,
       .global_shape = {6},
       .box = ShardBox::whole({6}),
       .value = bias()},
  };
}

void save_on(int w, const std::filesystem::path& dir) {
  run_ranks(InProcessGroup::create(w), [&](Communicator& comm) {
    ShardedCheckpoint::save(comm, dir, shards_of(comm.rank(), comm.world_size()));
  });
}

/// Each rank's CheckpointError message ("" when it returned).
template <typename Fn>
std::vector<std::string> errors_on(int w, Fn fn) {
  std::vector<std::string> out(static_cast<std::size_t>(w));
  run_ranks(InProcessGroup::create(w), [&](Communicator& comm) {
    try {
      fn(comm);
    } catch (const CheckpointError& e) {
      out[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::filesystem::path rank_file(const std::filesystem::path& dir, int rank) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("rank-" + std::to_string(rank) + "-", 0) == 0)
      return e.path();
  }
  return {};
}

}  // namespace

TEST_CASE("a checkpoint saved on 4 ranks reads back on 2 and on 1, and consolidates",
          "[optim][checkpoint]") {
  ScratchDir dir;
  save_on(4, dir.path());
  const ShardedCheckpoint ckpt = ShardedCheckpoint::open(dir.path());
  CHECK(ckpt.world_size() == 4);
  CHECK(ckpt.names() == std::vector<std::string>{"exp_avg/fc.weight", "fc.bias", "fc.weight"});
  CHECK(ckpt.info("fc.weight").param_id == 1);
  CHECK(ckpt.info("fc.weight").pieces.size() == 4);
  CHECK(ckpt.info("exp_avg/fc.weight").dtype == DType::F64);
  CHECK(ckpt.info("exp_avg/fc.weight").pieces[3].padding == 2);  // 30 over 4 pads to 32
  // On 2 ranks: halves of the rows (each from two saved shards), and of dim 1.
  CHECK_THAT(ckpt.read("fc.weight", ShardBox::along({8, 6}, 0, 4, 4)),
             TensorEqual(weight().narrow(0, 4, 4)));
  CHECK_THAT(ckpt.read("fc.weight", ShardBox::along({8, 6}, 1, 3, 3)),
             TensorEqual(weight().narrow(1, 3, 3).contiguous()));
  // Flat from boxes, boxes from flat ranges (through the whole tensor).
  CHECK_THAT(ckpt.read("fc.weight", ShardBox::flat_range(5, 30)),
             TensorEqual(weight().reshape({48}).narrow(0, 5, 30)));
  CHECK_THAT(ckpt.read("exp_avg/fc.weight", ShardBox::along({5, 6}, 0, 1, 3)),
             TensorEqual(state().narrow(0, 1, 3)));
  CHECK_THAT(ckpt.read("exp_avg/fc.weight", ShardBox::flat_range(7, 16)),
             TensorEqual(state().reshape({30}).narrow(0, 7, 16)));
  // On 1 rank: every tensor whole; the replicated bias from any of its four copies.
  const std::map<std::string, Tensor> whole = ckpt.consolidate();
  CHECK_THAT(whole.at("fc.weight"), TensorEqual(weight()));
  CHECK_THAT(whole.at("exp_avg/fc.weight"), TensorEqual(state()));
  CHECK_THAT(whole.at("fc.bias"), TensorEqual(bias()));
}

TEST_CASE("a checkpoint resharded 4 -> 2 -> 1 and 2 -> 4 keeps every bit", "[optim][checkpoint]") {
  for (const auto& pair : {std::pair{4, 2}, std::pair{2, 1}, std::pair{2, 4}}) {
    const int from = pair.first;
    const int to = pair.second;  // a plain int: clang 14 cannot capture a structured binding
    INFO(from << " -> " << to << " ranks");
    ScratchDir first, second;
    save_on(from, first.path());
    // The `to` ranks read their new shards from the `from` ranks' files and save them.
    run_ranks(InProcessGroup::create(to), [&](Communicator& comm) {
      const ShardedCheckpoint ckpt = ShardedCheckpoint::open_on_every_rank(comm, first.path());
      std::vector<TensorShard> mine = shards_of(comm.rank(), to);
      for (TensorShard& s : mine) s.value = ckpt.read(s.name, s.box);
      ShardedCheckpoint::save(comm, second.path(), mine);
    });
    const ShardedCheckpoint again = ShardedCheckpoint::open(second.path());
    CHECK(again.world_size() == to);
    CHECK_THAT(again.read_whole("fc.weight"), TensorEqual(weight()));
    CHECK_THAT(again.read_whole("exp_avg/fc.weight"), TensorEqual(state()));
    CHECK_THAT(again.read_whole("fc.bias"), TensorEqual(bias()));
  }
}

TEST_CASE("a new save replaces the old checkpoint only once its manifest lands",
          "[optim][checkpoint]") {
  ScratchDir dir;
  save_on(2, dir.path());
  const std::filesystem::path old0 = rank_file(dir.path(), 0);
  // A save that fails on one rank leaves the old checkpoint whole.
  const auto errors = errors_on(3, [&](Communicator& comm) {
    std::vector<TensorShard> mine = shards_of(comm.rank(), 3);
    if (comm.rank() == 1) mine[0].value = Tensor::zeros({1, 1});
    ShardedCheckpoint::save(comm, dir.path(), mine);
  });
  CHECK(contains(errors[1],
                 "ShardedCheckpoint::save on rank 1: shard of 'fc.weight': expected a "
                 "value of shape [3, 6] (its box [3:6, 0:6]), got [1, 1]"));
  CHECK(contains(errors[0], "rank 1 passed malformed shards"));
  CHECK(contains(errors[2], "rank 1 passed malformed shards"));
  CHECK(ShardedCheckpoint::open(dir.path()).world_size() == 2);
  CHECK(std::filesystem::exists(old0));
  // A good save replaces it and removes the old files.
  save_on(3, dir.path());
  CHECK(ShardedCheckpoint::open(dir.path()).world_size() == 3);
  CHECK_FALSE(std::filesystem::exists(old0));
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 4);  // three rank files and the manifest
}

TEST_CASE("a missing, damaged or stale rank file is an error naming the rank and the tensor",
          "[optim][checkpoint]") {
  ScratchDir dir, other;
  save_on(2, dir.path());
  save_on(2, other.path());
  SECTION("missing") {
    std::filesystem::remove(rank_file(dir.path(), 1));
    const ShardedCheckpoint ckpt = ShardedCheckpoint::open(dir.path());
    CHECK_THAT(ckpt.read("fc.weight", ShardBox::along({8, 6}, 0, 0, 4)),
               TensorEqual(weight().narrow(0, 0, 4)));  // rank 0's rows need only rank 0's file
    try {
      (void)ckpt.read_whole("fc.weight");
      FAIL("expected a CheckpointError");
    } catch (const CheckpointError& e) {
      CHECK(contains(e.what(), "rank 1's shards (of 'fc.weight' and others)"));
    }
  }
  SECTION("damaged") {
    const std::filesystem::path f = rank_file(dir.path(), 0);
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(-3, std::ios::end);
    io.put('\x5a');
    io.close();
    const ShardedCheckpoint ckpt = ShardedCheckpoint::open(dir.path());
    CHECK_THROWS_WITH(ckpt.read_whole("fc.bias"),
                      Catch::Contains("rank 0's shards (of 'fc.bias' and others)") &&
                          Catch::Contains("checksum"));
  }
  SECTION("stale: another save's file under the name the manifest gives") {
    std::filesystem::copy_file(rank_file(other.path(), 1), rank_file(dir.path(), 1),
                               std::filesystem::copy_options::overwrite_existing);
    const ShardedCheckpoint ckpt = ShardedCheckpoint::open(dir.path());
    CHECK_THROWS_WITH(
        ckpt.read_whole("exp_avg/fc.weight"),
        Catch::Contains("rank 1's shards") && Catch::Contains("not the file the manifest names"));
  }
  SECTION("no manifest: every rank of a collective open fails") {
    std::filesystem::remove(dir.path() / "manifest.shards");
    const auto errors = errors_on(2, [&](Communicator& comm) {
      (void)ShardedCheckpoint::open_on_every_rank(comm, dir.path());
    });
    CHECK(contains(errors[0], "its manifest"));
    CHECK(contains(errors[1], "its manifest"));
  }
}

TEST_CASE("reading what no shard holds, or outside the tensor, or a tensor it lacks, is named",
          "[optim][checkpoint]") {
  ScratchDir dir;
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    std::vector<TensorShard> mine = shards_of(comm.rank(), 2);
    if (comm.rank() == 1) mine.erase(mine.begin());  // nobody saves rows 4..7
    ShardedCheckpoint::save(comm, dir.path(), mine);
  });
  const ShardedCheckpoint ckpt = ShardedCheckpoint::open(dir.path());
  CHECK_THROWS_WITH(ckpt.read_whole("fc.weight"),
                    Catch::Contains("24 element(s) of [0:8, 0:6] of 'fc.weight' [8, 6] are in no "
                                    "rank's shard (it has 1 shard(s) from 2 rank(s))"));
  CHECK_THROWS_WITH(ckpt.read("fc.weight", ShardBox::along({8, 6}, 0, 6, 4)),
                    Catch::Contains("reading [6:10, 0:6] of 'fc.weight' [8, 6]") &&
                        Catch::Contains("outside [8, 6] in dimension 0"));
  CHECK_THROWS_WITH(ckpt.read_whole("fc.wieght"),
                    Catch::Contains("no tensor 'fc.wieght' (it holds 'exp_avg/fc.weight', "
                                    "'fc.bias', 'fc.weight')"));
}

TEST_CASE("ranks that disagree on a tensor's dtype or shape fail the save on every rank",
          "[optim][checkpoint]") {
  ScratchDir dir;
  const auto errors = errors_on(2, [&](Communicator& comm) {
    std::vector<TensorShard> mine = shards_of(comm.rank(), 2);
    if (comm.rank() == 1) mine[2].value = bias().to(DType::F64);
    ShardedCheckpoint::save(comm, dir.path(), mine);
  });
  for (const std::string& e : errors) {
    CHECK(contains(e,
                   "the ranks disagree on 'fc.bias': rank 0 saves it as F32 [6] (ParamId 2), "
                   "rank 1 as F64 [6] (ParamId 2)"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "manifest.shards"));
  CHECK(std::filesystem::is_empty(dir.path()));  // each rank removed its file
}
