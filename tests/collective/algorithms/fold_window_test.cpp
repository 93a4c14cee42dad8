// Fold windows (CallOptions::with_fold_window): the pieces of a buffer, each reduced with its
// place in the whole buffer, give the whole buffer's all_reduce and reduce bit for bit, on every
// algorithm and transport at world sizes 3 to 5 (where fold orders differ); misuse is one error on
// every rank.
#include <catch2/catch.hpp>

#include "collective/algorithms/algorithm.h"
#include "tensor/ops/shape_ops.h"
#include "tensor/random/generator.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

constexpr std::int64_t kTotal = 23;
/// Piece boundaries: pieces of 1, 1, 0, 7, 1 and 13 elements (smaller than the world, empty,
/// inside one chunk, across several).
const std::vector<std::int64_t> kCuts = {0, 1, 2, 2, 9, 10, kTotal};

/// The whole buffer's reduction, then the concatenation of its pieces' (index 0 and 1).
std::vector<Tensor> whole_and_pieces(Communicator& comm, DType dtype, bool reduce) {
  Generator gen(40 + static_cast<std::uint64_t>(comm.rank()));
  const Tensor in = Tensor::randn({kTotal}, gen, dtype);
  const auto run = [&](const Tensor& t, const CallOptions& call) {
    if (!reduce) return comm.all_reduce(t, ReduceOperation::Sum, call);
    const std::optional<Tensor> out = comm.reduce(t, 1, ReduceOperation::Sum, call);
    return out ? *out : Tensor::zeros(t.shape(), dtype);
  };
  std::vector<Tensor> pieces;
  for (std::size_t i = 0; i + 1 < kCuts.size(); ++i) {
    const std::int64_t n = kCuts[i + 1] - kCuts[i];
    pieces.push_back(
        run(in.narrow(0, kCuts[i], n).clone(), CallOptions().with_fold_window(kCuts[i], kTotal)));
  }
  return {run(in, CallOptions()), cat(pieces, 0)};
}

}  // namespace

TEMPLATE_TEST_CASE("pieces reduced with their fold windows equal the whole reduction bit for bit",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  for (const AlgorithmConfig& config : algorithm_configs()) {
    for (const int world : {3, 4, 5}) {
      // One group per world size: all_reduce and reduce (root 1), F32 and F64, in turn.
      auto out = run_group_with(
          TestType::make, world,
          [&](Communicator& comm) {
            std::vector<std::vector<Tensor>> results;
            for (const bool reduce : {false, true}) {
              for (const DType dtype : {DType::F32, DType::F64}) {
                results.push_back(whole_and_pieces(comm, dtype, reduce));
              }
            }
            return results;
          },
          config.options);
      for (int r = 0; r < world; ++r) {
        const auto& got = out[static_cast<std::size_t>(r)].value();
        for (std::size_t i = 0; i < got.size(); ++i) {
          const bool reduce = i >= 2;
          if (reduce && r != 1) continue;  // only root gets the result
          INFO(config.name << ", world " << world << ", rank " << r
                           << (reduce ? ", reduce, " : ", all_reduce, ")
                           << (i % 2 == 0 ? "F32" : "F64"));
          REQUIRE_THAT(got[i][1], TensorEqual(got[i][0]));
        }
      }
    }
  }
}

TEST_CASE("a fold window splits the whole reduction's chunks at the buffer's place",
          "[collective]") {
  // 10 elements at offset 6 of 20 over 4 ranks: chunks [0,5) [5,10) [10,15) [15,20) of the whole.
  const ChunkLayout layout(10, 4, FoldWindow{6, 20});
  CHECK(layout.size(0) == 0);
  CHECK(layout.begin(1) == 0);
  CHECK(layout.size(1) == 4);
  CHECK(layout.begin(2) == 4);
  CHECK(layout.size(2) == 5);
  CHECK(layout.begin(3) == 9);
  CHECK(layout.size(3) == 1);
  CHECK(layout.largest() == 5);
  // No window: the balanced chunks.
  const ChunkLayout balanced(257, 4);
  CHECK(balanced.size(0) == 65);
  CHECK(balanced.begin(3) == 193);
}

TEST_CASE("a misused fold window is one error on every rank", "[collective]") {
  const auto call = [](int world, const std::function<void(Communicator&)>& fn) {
    return run_group(world, [&](Communicator& comm) { fn(comm); });
  };
  const Tensor t = Tensor::ones({4});
  SECTION("a window that does not hold the tensor") {
    auto out = call(3, [&](Communicator& comm) {
      comm.all_reduce(t, ReduceOperation::Sum, CallOptions().with_fold_window(2, 5));
    });
    for (int r = 0; r < 3; ++r) {
      REQUIRE(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
      CHECK_THAT(out[r].message(),
                 Catch::Contains("expected a fold window that holds the tensor's 4 elements (0 <= "
                                 "offset, offset + numel <= total), got offset 2 and total 5"));
    }
  }
  SECTION("a window on another collective") {
    auto out = call(
        2, [&](Communicator& comm) { comm.all_gather(t, CallOptions().with_fold_window(0, 8)); });
    for (int r = 0; r < 2; ++r) {
      REQUIRE(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
      CHECK_THAT(out[r].message(),
                 Catch::Contains("expected a fold window on all_reduce or reduce only"));
    }
  }
  SECTION("ranks with other windows") {
    auto out = call(3, [&](Communicator& comm) {
      comm.all_reduce(t, ReduceOperation::Sum,
                      CallOptions().with_fold_window(comm.rank() == 2 ? 1 : 0, 8));
    });
    for (int r = 0; r < 3; ++r) {
      REQUIRE(error_kind(out[r]) == CollectiveErrorKind::ArgumentMismatch);
      CHECK_THAT(out[r].message(), Catch::Contains("fold window offset"));
    }
  }
  SECTION("too many words with a window") {
    auto out = call(2, [&](Communicator& comm) {
      comm.all_reduce(
          t, ReduceOperation::Sum,
          CallOptions().with_word("a", 1).with_word("b", 2).with_word("c", 3).with_fold_window(0,
                                                                                               4));
    });
    for (int r = 0; r < 2; ++r) {
      REQUIRE(error_kind(out[r]) == CollectiveErrorKind::InvalidArgument);
      CHECK_THAT(out[r].message(), Catch::Contains("and a fold window (2 words)"));
    }
  }
}
