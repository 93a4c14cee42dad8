// Table-driven coverage of every Communicator operation (tests/collective/coverage_table.h): every
// dtype with 0, 1, 3 and 257 elements per rank on world sizes 1-5 and 8; reduce and reduce_scatter
// for every valid (dtype, ReduceOperation) pair; the invalid pairs as errors on every rank;
// transposed and narrowed inputs for every op; inputs unchanged after every call. Every case runs
// over every transport of tests/collective/group_factories.h.
#include <catch2/catch.hpp>

#include <chrono>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/coverage_table.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;

namespace {

const std::vector<DType> kDTypes = {DType::F16, DType::BF16, DType::F32,
                                    DType::F64, DType::I32,  DType::I64};
const std::vector<std::int64_t> kRowCounts = {0, 1, 3, 257};

CommunicatorOptions test_options() {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(60);  // a hang fails the test instead of stalling CI
  return o;
}

}  // namespace

TEMPLATE_TEST_CASE(
    "data-movement ops move every dtype exactly with 0, 1, 3 and 257 elements per rank",
    "[collective]", RUCCL_GROUP_FACTORIES) {
  const std::vector<Op> ops = {
      Op::Broadcast, Op::BroadcastFromSender, Op::AllGather, Op::Gather, Op::Scatter,
      Op::AllToAll,  Op::AllToAllV,           Op::SendRecv};
  for (int world : kWorldSizes) {
    std::vector<Call> calls;
    for (Op op : ops) {
      for (DType dtype : kDTypes) {
        for (std::int64_t rows : kRowCounts) {
          const int root = static_cast<int>(calls.size()) % world;  // every rank is root somewhere
          calls.push_back({op, dtype, ReduceOperation::Sum, rows, 0, Layout::Contiguous, root});
        }
      }
    }
    run_and_check(TestType::make, world, calls, test_options());
  }
}

TEMPLATE_TEST_CASE("reduce and reduce_scatter are exact for every valid dtype and reduce operation",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  for (int world : kWorldSizes) {
    std::vector<Call> calls;
    for (const DTypeOp& pair : valid_dtype_ops()) {
      for (std::int64_t rows : kRowCounts) {
        for (Op op : {Op::Reduce, Op::ReduceScatter}) {
          const int root = static_cast<int>(calls.size()) % world;
          calls.push_back({op, pair.dtype, pair.op, rows, 0, Layout::Contiguous, root});
        }
      }
    }
    run_and_check(TestType::make, world, calls, test_options());
  }
}

TEMPLATE_TEST_CASE("all_reduce / reduce / broadcast agree under every algorithm configuration",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  // The exact pairs again, with the algorithm forced (ring in small segments included).
  const std::vector<DTypeOp> pairs = {
      {DType::F16, ReduceOperation::Sum},   {DType::BF16, ReduceOperation::Mean},
      {DType::F32, ReduceOperation::Prod},  {DType::F64, ReduceOperation::Min},
      {DType::I32, ReduceOperation::BitOr}, {DType::I64, ReduceOperation::Sum}};
  for (const AlgorithmConfig& config : algorithm_configs()) {
    for (int world : {2, 3, 5}) {
      INFO(config.name);
      std::vector<Call> calls;
      for (const DTypeOp& pair : pairs) {
        for (std::int64_t rows : {std::int64_t{3}, std::int64_t{257}}) {
          for (Op op : {Op::AllReduce, Op::Reduce, Op::Broadcast}) {
            const int root = static_cast<int>(calls.size()) % world;
            calls.push_back({op, pair.dtype, pair.op, rows, 0, Layout::Contiguous, root});
          }
        }
      }
      CommunicatorOptions options = config.options;
      options.timeout = test_options().timeout;
      run_and_check(TestType::make, world, calls, options);
    }
  }
}

TEST_CASE("reduce_operation_supports allows exactly the documented (dtype, op) pairs",
          "[collective]") {
  std::vector<DType> dtypes = kDTypes;
  dtypes.push_back(DType::Bool);
  for (DType dtype : dtypes) {
    for (ReduceOperation op : kAllOps) {
      INFO(dtype << " " << reduce_operation_name(op));
      const bool bitwise = op == ReduceOperation::BitAnd || op == ReduceOperation::BitOr ||
                           op == ReduceOperation::BitXor;
      const bool integer = dtype == DType::I32 || dtype == DType::I64;
      const bool expected = dtype != DType::Bool && (op == ReduceOperation::Mean ? !integer
                                                     : bitwise                   ? integer
                                                                                 : true);
      REQUIRE(reduce_operation_supports(op, dtype) == expected);
    }
  }
}

TEMPLATE_TEST_CASE(
    "invalid (dtype, op) pairs raise InvalidArgument on every rank of every reducing op",
    "[collective]", RUCCL_GROUP_FACTORIES) {
  // Mean on I32/I64, bitwise ops on F16/BF16/F32/F64, anything on Bool; then the group is finished.
  std::vector<DType> dtypes = kDTypes;
  dtypes.push_back(DType::Bool);
  int provoked = 0;
  for (Op op : {Op::AllReduce, Op::Reduce, Op::ReduceScatter}) {
    for (DType dtype : dtypes) {
      for (ReduceOperation rop : kAllOps) {
        if (reduce_operation_supports(rop, dtype)) continue;
        ++provoked;
        constexpr int kWorld = 3;
        std::vector<std::optional<CollectiveErrorKind>> after(kWorld);
        auto out = run_group_with(
            TestType::make, kWorld,
            [&](Communicator& comm) {
              const Call c{op, dtype, rop, 1, 2, Layout::Contiguous, 1};
              try {
                run_call(comm, c, Tensor::zeros({kWorld, 2}, dtype));
              } catch (const CollectiveError&) {
                try {
                  comm.barrier();
                } catch (const CollectiveError& e) {
                  after[static_cast<std::size_t>(comm.rank())] = e.kind();
                }
                throw;
              }
            },
            test_options());
        const std::string reason = "reduce operation " + std::string(reduce_operation_name(rop)) +
                                   " is not valid for dtype " + std::string(dtype_name(dtype));
        for (int r = 0; r < kWorld; ++r) {
          const auto& o = out[static_cast<std::size_t>(r)];
          INFO(op_name(op) << " " << dtype << " " << reduce_operation_name(rop) << ", rank " << r
                           << ": " << o.message());
          REQUIRE(error_kind(o) == CollectiveErrorKind::InvalidArgument);
          REQUIRE(o.message().find(reason) != std::string::npos);
          REQUIRE(after[static_cast<std::size_t>(r)] == CollectiveErrorKind::Aborted);
        }
      }
    }
  }
  REQUIRE(provoked == 3 * (4 * 3 + 2 * 1 + 8));  // bitwise x floats, Mean x ints, all x Bool
}

TEMPLATE_TEST_CASE("every op accepts transposed and narrowed inputs and leaves them unchanged",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  // One reduce operation per dtype, so the reducing ops see several kinds.
  auto reduce_op_for = [](DType dtype) {
    switch (dtype) {
      case DType::F16:
        return ReduceOperation::Max;
      case DType::BF16:
        return ReduceOperation::Prod;
      case DType::F32:
        return ReduceOperation::Mean;
      case DType::F64:
        return ReduceOperation::Min;
      case DType::I32:
        return ReduceOperation::BitAnd;
      default:
        return ReduceOperation::Sum;
    }
  };
  for (int world : {1, 2, 3, 4, 5}) {
    std::vector<Call> calls;
    for (Op op : kAllOpsTable) {
      for (Layout layout : {Layout::Transposed, Layout::Narrowed}) {
        for (DType dtype : kDTypes) {
          const int root = static_cast<int>(calls.size()) % world;
          calls.push_back({op, dtype, reduce_op_for(dtype), 2, 3, layout, root});
        }
      }
    }
    run_and_check(TestType::make, world, calls, test_options());
  }
}

TEMPLATE_TEST_CASE("2-d contiguous inputs keep their trailing dimension through every op",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  for (int world : {3, 8}) {
    std::vector<Call> calls;
    for (Op op : kAllOpsTable) {
      for (DType dtype : {DType::BF16, DType::I64}) {
        const int root = static_cast<int>(calls.size()) % world;
        calls.push_back({op, dtype, ReduceOperation::Max, 3, 5, Layout::Contiguous, root});
      }
    }
    run_and_check(TestType::make, world, calls, test_options());
  }
}

TEMPLATE_TEST_CASE("all_gather and reduce_scatter of about a million elements are exact",
                   "[collective][slow]", RUCCL_GROUP_FACTORIES) {
  // World 4: all_gather of 262145 elements per rank and reduce_scatter of 1048580 elements per
  // rank (both a 1048580-element tensor). One group per call, so only one call's results are
  // alive at a time. Two calls only: CI runs [slow] tests under ThreadSanitizer too (a few s).
  constexpr int kWorld = 4;
  constexpr std::int64_t kRows = (std::int64_t{1} << 18) + 1;  // per rank and per block
  const std::vector<Call> calls = {
      {Op::AllGather, DType::F32, ReduceOperation::Sum, kRows},
      {Op::ReduceScatter, DType::BF16, ReduceOperation::Sum, kRows},  // staged through F32
  };
  for (const Call& c : calls) run_and_check(TestType::make, kWorld, {c}, test_options());
}
