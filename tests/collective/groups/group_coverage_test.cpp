// The coverage table on the groups of 2x2 and 2x3 meshes (tests/collective/groups/mesh_table.h),
// along each axis, over every transport of tests/collective/group_factories.h: every op, every
// dtype, odd counts, every valid (dtype, reduce operation) pair, transposed inputs, blocking and
// asynchronous. The groups of one axis run at once (disjoint groups busy together).
#include <catch2/catch.hpp>

#include <chrono>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/collective/groups/mesh_table.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;

namespace {

// Every op and dtype with 0, 1 and 257 elements per rank (odd, and more than a ring's ranks),
// every valid reduction with 3, and transposed inputs.
std::vector<Call> table_calls(int group_world) {
  std::vector<Call> calls;
  for (Op op : kAllOpsTable) {
    for (DType dtype : kReduceDTypes) {
      for (std::int64_t rows : {0, 1, 257}) {
        const int root = static_cast<int>(calls.size()) % group_world;
        calls.push_back({op, dtype, ReduceOperation::Sum, rows, 0, Layout::Contiguous, root});
      }
    }
  }
  for (const DTypeOp& pair : valid_dtype_ops()) {
    for (Op op : {Op::AllReduce, Op::Reduce, Op::ReduceScatter}) {
      const int root = static_cast<int>(calls.size()) % group_world;
      calls.push_back({op, pair.dtype, pair.op, 3, 0, Layout::Contiguous, root});
    }
  }
  for (Op op : kAllOpsTable) {
    calls.push_back({op, DType::F32, ReduceOperation::Sum, 2, 3, Layout::Transposed, 0});
  }
  return calls;
}

}  // namespace

TEMPLATE_TEST_CASE("the coverage table runs on every group of 2x2 and 2x3 meshes", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  const std::vector<Axes> meshes = {{{"dp", 2}, {"tp", 2}}, {{"dp", 2}, {"tp", 3}}};
  for (const Axes& axes : meshes) {
    for (const auto& axis : axes) {
      run_and_check_on_mesh(TestType::make, axes, axis.first, table_calls(axis.second),
                            short_timeout(std::chrono::seconds(60)));
    }
  }
}

TEMPLATE_TEST_CASE("asynchronous calls run on the groups of a 2x3 mesh", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  std::vector<Call> calls;
  for (Op op : kAllOpsTable) {
    for (DType dtype : {DType::F32, DType::I64}) {
      calls.push_back({op, dtype, ReduceOperation::Sum, 5, 0, Layout::Contiguous, 1});
    }
  }
  const Axes axes = {{"dp", 2}, {"tp", 3}};
  for (const char* axis : {"dp", "tp"}) {
    run_and_check_on_mesh(TestType::make, axes, axis, calls,
                          short_timeout(std::chrono::seconds(60)), Mode::Async);
  }
}
