// The collective coverage table (tests/collective/coverage_table.h) over MPI processes: every op,
// every dtype, 0, 1, 3 and 257 rows, every valid reduce operation, non-contiguous layouts; each
// process checks its own outputs against the table's closed form and that its input is unchanged.
#include "tests/collective/collective_test_support.h"
#include "tests/collective/coverage_table.h"
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;
using namespace ruccl::testing::mpi_job;

namespace {

const std::vector<DType> kDTypes = {DType::F16, DType::BF16, DType::F32,
                                    DType::F64, DType::I32,  DType::I64};
const std::vector<std::int64_t> kRows = {0, 1, 3, 257};

/// Runs `calls` in order on `comm` and checks this rank's outputs and inputs. Mode::Async: every
/// call is started with its *_async form first, then they are waited for last to first.
void run_and_check_here(Communicator& comm, const std::vector<Call>& calls,
                        Mode mode = Mode::Blocking) {
  const int world = comm.world_size();
  const int r = comm.rank();
  std::vector<std::vector<Work>> works(calls.size());
  std::vector<Tensor> inputs(calls.size());
  for (std::size_t k = 0; mode == Mode::Async && k < calls.size(); ++k) {
    const Call& c = calls[k];
    const Shape shape = input_shape(c, world);
    inputs[k] = laid_out(input_values(c, world, r, shape.numel()), shape, c.dtype, c.layout);
    works[k] = start_call(comm, c, inputs[k]);
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::size_t k = mode == Mode::Async ? calls.size() - 1 - i : i;  // async: out of order
    const Call& c = calls[k];
    INFO("world " << world << ", rank " << r << ", call " << k << ": " << describe(c));
    const Shape shape = input_shape(c, world);
    const CallValues values = call_values(c, world, shape.numel());
    if (mode == Mode::Blocking) {
      inputs[k] = laid_out(values.inputs[static_cast<std::size_t>(r)], shape, c.dtype, c.layout);
    }
    const Tensor& in = inputs[k];
    const Outputs got = mode == Mode::Blocking ? run_call(comm, c, in) : finish_call(c, works[k]);
    const Outputs expected = expected_outputs(c, world, r, values);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      INFO("output " << i);
      REQUIRE(got[i].has_value() == expected[i].has_value());
      if (expected[i]) require_equal(*got[i], *expected[i]);
    }
    REQUIRE(in.is_contiguous() == (c.layout == Layout::Contiguous));
    require_equal(in.contiguous(),
                  tensor_of_ints(values.inputs[static_cast<std::size_t>(r)], shape, c.dtype));
  }
}

}  // namespace

TEST_CASE("every op moves every dtype exactly over MPI with 0, 1, 3 and 257 rows", "[mpi]") {
  Communicator comm = world();
  std::vector<Call> calls;
  for (Op op : kAllOpsTable) {
    if (reduces(op)) continue;
    for (DType dtype : kDTypes) {
      for (std::int64_t rows : kRows) {
        const int root = static_cast<int>(calls.size()) % comm.world_size();
        calls.push_back({op, dtype, ReduceOperation::Sum, rows, 0, Layout::Contiguous, root});
      }
    }
  }
  run_and_check_here(comm, calls);
}

TEST_CASE("reductions over MPI are exact for every valid dtype and reduce operation", "[mpi]") {
  Communicator comm = world();
  std::vector<Call> calls;
  for (const DTypeOp& pair : valid_dtype_ops()) {
    for (std::int64_t rows : kRows) {
      for (Op op : {Op::AllReduce, Op::Reduce, Op::ReduceScatter}) {
        const int root = static_cast<int>(calls.size()) % comm.world_size();
        calls.push_back({op, pair.dtype, pair.op, rows, 0, Layout::Contiguous, root});
      }
    }
  }
  run_and_check_here(comm, calls);
}

TEST_CASE("every op over MPI gives the blocking result through its async form, all in flight",
          "[mpi][async]") {
  Communicator comm = world();
  std::vector<Call> calls;
  for (Op op : kAllOpsTable) {
    for (DType dtype : {DType::BF16, DType::F64, DType::I64}) {
      for (std::int64_t rows : {std::int64_t{0}, std::int64_t{3}, std::int64_t{257}}) {
        const int root = static_cast<int>(calls.size()) % comm.world_size();
        const ReduceOperation rop =
            dtype == DType::I64 ? ReduceOperation::BitOr : ReduceOperation::Min;
        calls.push_back({op, dtype, rop, rows, 0, Layout::Contiguous, root});
      }
    }
  }
  run_and_check_here(comm, calls, Mode::Async);
}

TEST_CASE("every op over MPI takes transposed and narrowed inputs", "[mpi]") {
  Communicator comm = world();
  std::vector<Call> calls;
  for (Op op : kAllOpsTable) {
    for (Layout layout : {Layout::Transposed, Layout::Narrowed}) {
      for (DType dtype : {DType::F32, DType::BF16, DType::I64}) {
        calls.push_back({op, dtype, ReduceOperation::Sum, 3, 5, layout, 1});
      }
    }
  }
  run_and_check_here(comm, calls);
}

TEST_CASE("large all_reduce and all_gather over MPI are exact", "[mpi]") {
  Communicator comm = world();
  // 1 Mi elements: several pieces and ring segments.
  run_and_check_here(comm, {{Op::AllReduce, DType::F32, ReduceOperation::Sum, 1 << 20},
                            {Op::AllReduce, DType::I64, ReduceOperation::Max, 300000},
                            {Op::AllGather, DType::F64, ReduceOperation::Sum, 200000},
                            {Op::Broadcast, DType::BF16, ReduceOperation::Sum, 1 << 19}});
}
