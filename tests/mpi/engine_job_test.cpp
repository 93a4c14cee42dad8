// The MPI engine as every process of the job sees it: Communicator::from_env picks it under
// mpirun, MPI's own reductions (Mean = Sum / W), the fallback to our algorithms for F16/BF16 and
// for require_bit_identical (then bit-identical to the same run in one process), and what the
// engine says it guarantees.
#include <cstdlib>

#include "collective/mpi/mpi_engine.h"
#include "collective/run_ranks.h"
#include "tensor/tensor.h"
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing::mpi_job;
using Kind = CollectiveErrorKind;
using namespace std::chrono_literals;

namespace {

/// A group of the job over the MPI engine, with `engine` pointing at this rank's engine.
Communicator group_with_engine(MpiEngine*& engine, CommunicatorOptions options = {}) {
  options.timeout = 20s;
  const EngineFactory factory = [&engine](Transport& t, Device d, const CommunicatorOptions& o) {
    std::unique_ptr<CollectiveEngine> e = make_mpi_engine(t, d, o);
    engine = dynamic_cast<MpiEngine*>(e.get());
    return e;
  };
  return Communicator(MpiTransport::create(MPI_COMM_WORLD, {}, Deadline::after(options.timeout)),
                      Device::cpu(), options, factory);
}

/// Rank r's F32 input: values with many significant bits, so the order of a sum shows.
Tensor noisy_input(int rank, std::int64_t n) {
  Generator gen(1234 + static_cast<std::uint64_t>(rank));
  return Tensor::randn({n}, gen, DType::F32) * 1000.0;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("Communicator::from_env under mpirun joins the MPI job", "[mpi]") {
  Communicator comm = Communicator::from_env();
  REQUIRE(comm.world_size() == job_size());
  const Tensor sum = comm.all_reduce(Tensor::from_vector<std::int64_t>({comm.rank(), 1}));
  const std::int64_t w = comm.world_size();
  REQUIRE(sum.to_vector<std::int64_t>() == std::vector<std::int64_t>{w * (w - 1) / 2, w});
}

TEST_CASE("RUCCL_ENGINE with an unknown value is InvalidConfig naming it", "[mpi]") {
  ::setenv("RUCCL_ENGINE", "nccl-please", 1);
  const CollectiveError e = require_error(Kind::InvalidConfig, [] { Communicator::from_env(); });
  ::unsetenv("RUCCL_ENGINE");
  REQUIRE(contains(e.what(), "expected \"mpi\" or \"tcp\", got \"nccl-please\""));
}

TEST_CASE("the MPI engine reduces F32, F64 and integers with MPI and Mean is Sum / W", "[mpi]") {
  MpiEngine* engine = nullptr;
  Communicator comm = group_with_engine(engine);
  REQUIRE(engine != nullptr);
  REQUIRE(engine->name() == "mpi");
  REQUIRE_FALSE(engine->bit_identical());  // MPI's reduction order is its own
  for (DType d : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    REQUIRE(engine->native_reduction(d, 1000));
  }
  const int w = comm.world_size();
  const int r = comm.rank();
  // Mean of r + i over ranks: (W - 1) / 2 + i, exact in binary for W = 2 and 4 (and 3: 1 + i).
  const Tensor x = Tensor::arange(0, 5, 1, DType::F64) + static_cast<double>(r);
  const Tensor mean = comm.all_reduce(x, ReduceOperation::Mean);
  for (std::int64_t i = 0; i < 5; ++i) {
    REQUIRE(mean.to_vector<double>()[static_cast<std::size_t>(i)] == (w - 1) / 2.0 + i);
  }
  const Tensor shard =
      comm.reduce_scatter(Tensor::full({2 * w}, 3.0, DType::F32), ReduceOperation::Mean);
  REQUIRE(shard.to_vector<float>() == std::vector<float>{3.0f, 3.0f});
  const std::optional<Tensor> prod =
      comm.reduce(Tensor::full({3}, 2.0, DType::I64), w - 1, ReduceOperation::Prod);
  REQUIRE(prod.has_value() == (r == w - 1));
  if (prod) REQUIRE(prod->to_vector<std::int64_t>() == std::vector<std::int64_t>(3, 1LL << w));
}

TEST_CASE("F16 and BF16 reductions on the MPI engine fall back to our algorithms, exactly",
          "[mpi]") {
  MpiEngine* engine = nullptr;
  Communicator comm = group_with_engine(engine);
  REQUIRE_FALSE(engine->native_reduction(DType::F16, 8));
  REQUIRE_FALSE(engine->native_reduction(DType::BF16, 8));
  const int w = comm.world_size();
  for (DType d : {DType::F16, DType::BF16}) {
    const Tensor x = (Tensor::arange(0, 8, 1, DType::F32) + static_cast<double>(comm.rank())).to(d);
    const Tensor sum = comm.all_reduce(x, ReduceOperation::Sum);
    REQUIRE(sum.dtype() == d);
    const std::vector<float> got = sum.to(DType::F32).to_vector<float>();
    for (std::size_t i = 0; i < 8; ++i) {
      REQUIRE(got[i] == static_cast<float>(w * static_cast<int>(i) + w * (w - 1) / 2));
    }
    // Data movement of F16/BF16 is MPI's (bytes): all_gather keeps every value.
    const Tensor all = comm.all_gather(x);
    REQUIRE(all.shape() == Shape{8 * w});
    REQUIRE(same_bits(all.narrow(0, 8 * comm.rank(), 8), x));
  }
}

TEST_CASE("require_bit_identical on the MPI engine gives the in-process run's bits", "[mpi]") {
  CommunicatorOptions options;
  options.require_bit_identical = true;
  MpiEngine* engine = nullptr;
  Communicator comm = group_with_engine(engine, options);
  REQUIRE(engine->bit_identical());
  REQUIRE_FALSE(engine->native_reduction(DType::F32, 8));
  const int w = comm.world_size();
  // The same inputs on W threads of this process: the reference bits.
  for (std::int64_t n : {std::int64_t{1000}, std::int64_t{300000}}) {
    INFO(n << " elements");
    std::vector<Tensor> reference(static_cast<std::size_t>(w));
    run_ranks(InProcessGroup::create(w), [&](Communicator& c) {
      reference[static_cast<std::size_t>(c.rank())] =
          c.all_reduce(noisy_input(c.rank(), n), ReduceOperation::Sum);
    });
    const Tensor got = comm.all_reduce(noisy_input(comm.rank(), n), ReduceOperation::Sum);
    REQUIRE(same_bits(got, reference[static_cast<std::size_t>(comm.rank())]));
    // And across the job: every process holds the same bits (rank 0's, broadcast).
    REQUIRE(same_bits(comm.broadcast(got, 0), got));
  }
}
