// The coverage table (tests/collective/coverage_table.h) over the simulated world in checking mode
// (real bytes, real algorithms): the whole table at small world sizes, every op at 64 and 100
// ranks, and every op at 1000 or 1024 ranks ([slow]). Odd world sizes and
// non-powers of two throughout.
#include <catch2/catch.hpp>

#include <chrono>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/coverage_table.h"
#include "tests/collective/sim/sim_factory.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;

namespace {

const std::vector<DType> kDTypes = {DType::F16, DType::BF16, DType::F32,
                                    DType::F64, DType::I32,  DType::I64};

CommunicatorOptions test_options() {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(120);  // a hang fails the test instead of stalling CI
  return o;
}

// Every op of the table once per dtype (the reducing ops with a reduce operation valid for it),
// with `rows` rows, roots spread over the ranks.
std::vector<Call> every_op(int world, std::int64_t rows) {
  std::vector<Call> calls;
  for (Op op : kAllOpsTable) {
    for (DType dtype : kDTypes) {
      const bool integer = dtype == DType::I32 || dtype == DType::I64;
      const ReduceOperation rop = integer ? ReduceOperation::BitXor : ReduceOperation::Mean;
      const int root = static_cast<int>(calls.size() * 7919) % world;
      calls.push_back({op, dtype, rop, rows, 0, Layout::Contiguous, root});
    }
  }
  return calls;
}

}  // namespace

TEST_CASE("the coverage table is exact over the simulated world at 1 to 13 ranks", "[sim]") {
  for (int world : {1, 2, 3, 5, 8, 13}) {
    std::vector<Call> calls;
    for (Op op : kAllOpsTable) {
      if (reduces(op)) continue;
      for (DType dtype : kDTypes) {
        for (std::int64_t rows : {0, 1, 3, 257}) {
          calls.push_back({op, dtype, ReduceOperation::Sum, rows, 0, Layout::Contiguous,
                           static_cast<int>(calls.size()) % world});
        }
      }
    }
    for (const DTypeOp& pair : valid_dtype_ops()) {
      for (std::int64_t rows : {0, 1, 3, 257}) {
        for (Op op : {Op::AllReduce, Op::Reduce, Op::ReduceScatter}) {
          calls.push_back({op, pair.dtype, pair.op, rows, 0, Layout::Contiguous,
                           static_cast<int>(calls.size()) % world});
        }
      }
    }
    run_and_check(Simulated::make, world, calls, test_options());
  }
}

TEST_CASE("asynchronous calls are exact over the simulated world at 6 and 33 ranks", "[sim]") {
  // Every op started with its *_async form, all in flight, waited for last to first: each rank's
  // progress thread makes its transport calls.
  for (int world : {6, 33}) {
    run_and_check(Simulated::make, world, every_op(world, 3), test_options(), Mode::Async);
  }
}

TEST_CASE("groups split from a simulated world reduce within themselves", "[sim]") {
  // 30 ranks split by rank % 3 into three groups of 10 (keyed in reverse): each group's
  // all_reduce sums its own ranks, then the parent still works.
  constexpr int kWorld = 30;
  auto out = run_group_with(
      Simulated::make, kWorld,
      [](Communicator& comm) {
        std::optional<Communicator> sub = comm.split(comm.rank() % 3, -comm.rank());
        const Tensor sum = sub->all_reduce(Tensor::full({4}, comm.rank(), DType::F64));
        const Tensor all = comm.all_reduce(Tensor::ones({1}, DType::I64));
        return std::make_pair(sum.to_vector<double>()[0], all.to_vector<std::int64_t>()[0]);
      },
      test_options());
  for (int r = 0; r < kWorld; ++r) {
    double expected = 0;
    for (int q = r % 3; q < kWorld; q += 3) expected += q;
    INFO("rank " << r);
    REQUIRE(out[static_cast<std::size_t>(r)].value().first == expected);
    REQUIRE(out[static_cast<std::size_t>(r)].value().second == kWorld);
  }
}

TEST_CASE("every algorithm configuration is exact over the simulated world at 7 and 12 ranks",
          "[sim]") {
  for (const AlgorithmConfig& config : algorithm_configs()) {
    for (int world : {7, 12}) {
      INFO(config.name);
      std::vector<Call> calls;
      for (std::int64_t rows : {1, 3, 1000}) {  // 1000 F64 elements: larger than a ring segment
        for (Op op : {Op::AllReduce, Op::Reduce, Op::Broadcast}) {
          calls.push_back({op, DType::F64, ReduceOperation::Sum, rows, 0, Layout::Contiguous,
                           static_cast<int>(calls.size()) % world});
          calls.push_back({op, DType::BF16, ReduceOperation::Max, rows, 0, Layout::Contiguous,
                           static_cast<int>(calls.size() + 3) % world});
        }
      }
      CommunicatorOptions options = config.options;
      options.timeout = test_options().timeout;
      run_and_check(Simulated::make, world, calls, options);
    }
  }
}

TEST_CASE("every op and dtype is exact over the simulated world at 64 and 100 ranks", "[sim]") {
  // 1 row at 64 ranks, 3 at 100; one all_reduce large enough for Direct's pairwise phases, one
  // empty all_gather.
  for (int world : {64, 100}) {
    std::vector<Call> calls = every_op(world, world == 64 ? 1 : 3);
    calls.push_back({Op::AllReduce, DType::F32, ReduceOperation::Sum, 40000});
    calls.push_back({Op::AllGather, DType::I64, ReduceOperation::Sum, 0});
    run_and_check(Simulated::make, world, calls, test_options());
  }
}

TEST_CASE("half the ops are exact over the simulated world at 1024 ranks", "[sim][slow]") {
  // One dtype per op (the 64- and 100-rank case has them all), counts 0, 1 and odd, roots far
  // from rank 0, and one all_reduce large enough for the direct algorithm's pairwise
  // reduce-scatter and all-gather (each rank sends 2 x 1023 messages). The other half of the ops
  // run at 1000 ranks (a call costs 1-2 CPU-seconds at 1024 ranks here: every rank's 1023 messages
  // and records).
  const std::vector<Call> at_1024 = {
      {Op::AllReduce, DType::F32, ReduceOperation::Sum, 3},
      {Op::AllReduce, DType::BF16, ReduceOperation::Max, 20001},
      {Op::Reduce, DType::F64, ReduceOperation::Mean, 1, 0, Layout::Contiguous, 1023},
      {Op::Broadcast, DType::F16, ReduceOperation::Sum, 257, 0, Layout::Contiguous, 517},
      {Op::AllGather, DType::I64, ReduceOperation::Sum, 1},
      {Op::AllToAllV, DType::F64, ReduceOperation::Sum, 1},
      {Op::SendRecv, DType::F64, ReduceOperation::Sum, 5},
  };
  run_and_check(Simulated::make, 1024, at_1024, test_options());
}

TEST_CASE("the other half of the ops are exact over the simulated world at 1000 ranks",
          "[sim][slow]") {
  const std::vector<Call> at_1000 = {
      {Op::AllReduce, DType::I64, ReduceOperation::BitXor, 0},
      {Op::ReduceScatter, DType::I32, ReduceOperation::Sum, 1},
      {Op::BroadcastFromSender, DType::I32, ReduceOperation::Sum, 1, 0, Layout::Contiguous, 3},
      {Op::Gather, DType::BF16, ReduceOperation::Sum, 3, 0, Layout::Contiguous, 999},
      {Op::Scatter, DType::F32, ReduceOperation::Sum, 1, 0, Layout::Contiguous, 12},
      {Op::AllToAll, DType::I32, ReduceOperation::Sum, 1},
  };
  run_and_check(Simulated::make, 1000, at_1000, test_options());
}
