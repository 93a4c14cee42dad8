// The algorithms for many ranks (RecursiveDoubling, HalvingDoubling) through the coverage table
// (tests/collective/coverage_table.h): every world size 1-16 over in-process threads (reading in
// place and as a copying transport), spot checks up to 64 ranks, TCP and shared memory at 2-4
// processes' worth of ranks; and what Auto picks for them (collective/algorithms/selection.h).
#include <catch2/catch.hpp>

#include <chrono>

#include "collective/algorithms/selection.h"

#include "tests/collective/coverage_table.h"
#include "tests/collective/group_factories.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;

namespace {

CommunicatorOptions options_for(Algorithm algorithm) {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(60);  // a hang fails the test instead of stalling CI
  o.all_reduce_algorithm = algorithm;
  o.reduce_algorithm = algorithm;
  if (algorithm == Algorithm::HalvingDoubling) {
    o.determinism = Determinism::PerAlgorithm;
  } else {
    o.broadcast_algorithm = algorithm;
  }
  return o;
}

// The calls of one table run: the reducing ops over (dtype, op) pairs that cover every kernel
// kind, with 0, 1, an odd count and one larger than a chunk; with RecursiveDoubling also
// broadcast and all_gather (every dtype's bytes). Roots rotate over the ranks.
std::vector<Call> calls_for(Algorithm algorithm, int world, bool small) {
  const std::vector<std::pair<DType, ReduceOperation>> pairs = {
      {DType::F32, ReduceOperation::Sum},   {DType::BF16, ReduceOperation::Mean},
      {DType::F64, ReduceOperation::Min},   {DType::F16, ReduceOperation::Prod},
      {DType::I32, ReduceOperation::BitOr}, {DType::I64, ReduceOperation::Sum}};
  const std::vector<std::int64_t> rows =
      small ? std::vector<std::int64_t>{1, 100} : std::vector<std::int64_t>{0, 1, 13, 257};
  std::vector<Call> calls;
  auto add = [&](Op op, DType dtype, ReduceOperation rop, std::int64_t n) {
    const int root = static_cast<int>(calls.size() * 7) % world;
    calls.push_back({op, dtype, rop, n, 0, Layout::Contiguous, root, algorithm});
  };
  for (const auto& [dtype, rop] : pairs) {
    for (std::int64_t n : rows) {
      add(Op::AllReduce, dtype, rop, n);
      add(Op::Reduce, dtype, rop, n);
    }
  }
  if (algorithm == Algorithm::RecursiveDoubling) {
    for (DType dtype : {DType::F16, DType::F64, DType::I32, DType::Bool}) {
      for (std::int64_t n : rows) {
        add(Op::Broadcast, dtype, ReduceOperation::Sum, n);
        add(Op::AllGather, dtype, ReduceOperation::Sum, n);
      }
    }
  }
  return calls;
}

}  // namespace

TEMPLATE_TEST_CASE("the many-rank algorithms are exact at every world size from 1 to 16",
                   "[collective]", InProcess, InProcessCopying) {
  for (Algorithm algorithm : {Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling}) {
    for (int world = 1; world <= 16; ++world) {
      INFO(algorithm_name(algorithm) << ", world " << world);
      run_and_check(TestType::make, world, calls_for(algorithm, world, false),
                    options_for(algorithm));
    }
  }
}

TEST_CASE("the many-rank algorithms are exact at 24, 33 and 64 ranks", "[collective]") {
  for (Algorithm algorithm : {Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling}) {
    for (int world : {24, 33, 64}) {
      INFO(algorithm_name(algorithm) << ", world " << world);
      run_and_check(InProcessCopying::make, world, calls_for(algorithm, world, true),
                    options_for(algorithm));
    }
  }
}

TEMPLATE_TEST_CASE("the many-rank algorithms are exact over TCP and shared memory", "[collective]",
                   TcpLoopback, TcpSharedMemory) {
  for (Algorithm algorithm : {Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling}) {
    for (int world : {2, 3, 4}) {
      INFO(algorithm_name(algorithm) << ", world " << world);
      run_and_check(TestType::make, world, calls_for(algorithm, world, true),
                    options_for(algorithm));
    }
  }
}

TEST_CASE("the many-rank algorithms run asynchronously, all calls in flight", "[collective]") {
  for (Algorithm algorithm : {Algorithm::RecursiveDoubling, Algorithm::HalvingDoubling}) {
    INFO(algorithm_name(algorithm));
    run_and_check(InProcessCopying::make, 7, calls_for(algorithm, 7, true), options_for(algorithm),
                  Mode::Async);
  }
}

TEST_CASE("Auto keeps its choices up to 8 ranks and picks the log-step algorithms from 16",
          "[collective]") {
  CommunicatorOptions linear;
  CommunicatorOptions per_algorithm;
  per_algorithm.determinism = Determinism::PerAlgorithm;
  const std::size_t small = 4 << 10;
  const std::size_t medium = 1 << 20;
  const std::size_t large = 64 << 20;
  for (const CommunicatorOptions& o : {linear, per_algorithm}) {
    for (OpKind kind : {OpKind::AllReduce, OpKind::Reduce, OpKind::Broadcast}) {
      for (int world : {2, 3, 4, 8}) {  // the thresholds measured with 2-8 ranks
        REQUIRE(auto_algorithm(kind, small, LinkKind::Copying, o, world) == Algorithm::Direct);
        REQUIRE(auto_algorithm(kind, medium, LinkKind::Copying, o, world) == Algorithm::Direct);
        REQUIRE(auto_algorithm(kind, large, LinkKind::Copying, o, world) == Algorithm::Ring);
      }
      for (int world : {16, 17, 64}) {
        REQUIRE(auto_algorithm(kind, small, LinkKind::Copying, o, world) ==
                Algorithm::RecursiveDoubling);
        REQUIRE(auto_algorithm(kind, small, LinkKind::SharedMemory, o, world) ==
                Algorithm::RecursiveDoubling);
        REQUIRE(auto_algorithm(kind, large, LinkKind::Copying, o, world) == Algorithm::Ring);
        REQUIRE(auto_algorithm(kind, small, LinkKind::InProcess, o, world) == Algorithm::Direct);
      }
    }
    REQUIRE(auto_algorithm(OpKind::AllGather, small, LinkKind::Copying, o, 8) == Algorithm::Direct);
    REQUIRE(auto_algorithm(OpKind::AllGather, small, LinkKind::Copying, o, 16) ==
            Algorithm::RecursiveDoubling);
    REQUIRE(auto_algorithm(OpKind::AllGather, medium, LinkKind::Copying, o, 16) ==
            Algorithm::Direct);
    REQUIRE(auto_algorithm(OpKind::Broadcast, medium, LinkKind::Copying, o, 16) ==
            Algorithm::RecursiveDoubling);
  }
  // Between the small-message size and the ring: a tree fold only where the bits may differ.
  for (OpKind kind : {OpKind::AllReduce, OpKind::Reduce}) {
    REQUIRE(auto_algorithm(kind, medium, LinkKind::Copying, linear, 16) == Algorithm::Direct);
    REQUIRE(auto_algorithm(kind, medium, LinkKind::Copying, per_algorithm, 16) ==
            Algorithm::HalvingDoubling);
  }
  REQUIRE(algorithm_runs(OpKind::Broadcast, Algorithm::RecursiveDoubling));
  REQUIRE_FALSE(algorithm_runs(OpKind::Broadcast, Algorithm::HalvingDoubling));
  REQUIRE_FALSE(algorithm_runs(OpKind::AllGather, Algorithm::Ring));
  REQUIRE(folds_linearly(Algorithm::RecursiveDoubling));
  REQUIRE_FALSE(folds_linearly(Algorithm::HalvingDoubling));
}

TEST_CASE("Auto runs the log-step algorithms at 16 ranks over a copying transport",
          "[collective]") {
  // The stats count each call under the algorithm it ran.
  CommunicatorOptions o = options_for(Algorithm::Auto);
  o.determinism = Determinism::PerAlgorithm;
  auto out = run_group_with(
      InProcessCopying::make, 16,
      [](Communicator& comm) {
        const Tensor small = Tensor::ones({16}, DType::F32);
        const Tensor medium = Tensor::ones({1 << 17}, DType::F32);  // 512 KiB
        comm.all_reduce(small);
        comm.all_reduce(medium);
        comm.all_gather(small);
        comm.broadcast(small, 3);
        return comm.stats().to_string();
      },
      o);
  const std::string summary = out[0].value();
  INFO(summary);
  REQUIRE(summary.find("recursive_doubling") != std::string::npos);
  REQUIRE(summary.find("halving_doubling") != std::string::npos);
}

TEST_CASE("ranks that name different all_gather algorithms fail the agreement on every rank",
          "[collective]") {
  // all_gather agrees on the algorithm a call names: RecursiveDoubling on rank 0, Auto elsewhere.
  auto out = run_group_with(
      InProcess::make, 3,
      [](Communicator& comm) {
        const CallOptions o = CallOptions().with_algorithm(
            comm.rank() == 0 ? Algorithm::RecursiveDoubling : Algorithm::Auto);
        comm.all_gather(Tensor::ones({2}, DType::F32), o);
      },
      options_for(Algorithm::Auto));
  for (const auto& o : out) {
    INFO(o.message());
    REQUIRE(error_kind(o) == CollectiveErrorKind::ArgumentMismatch);
  }
}
