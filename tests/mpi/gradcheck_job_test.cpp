// The differentiable collectives over MPI processes, against float64 central differences of the
// global objective F = sum over ranks of L_r, L_r = sum(op(x_r) * c_r) (c_r: weights different on
// every rank, so a gradient sent to the wrong rank or element shows). Every process computes its
// own analytic gradient dF/dx_r by backward (whose collectives cross the job), then for every
// element of every rank's input all processes evaluate F with that element moved by +-eps; the
// owner of the element compares.
#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "tensor/tensor.h"
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using namespace ruccl::testing::mpi_job;
namespace dc = ruccl::autodiff::collective;

namespace {

using OpFn = std::function<Var(Communicator&, const Var&)>;

Tensor rank_tensor(const Shape& shape, int rank, std::uint64_t seed) {
  Generator gen(seed * 100 + static_cast<std::uint64_t>(rank));
  return Tensor::randn(shape, gen, DType::F64);
}

void check_op(Communicator& comm, const Shape& in_shape, const Shape& out_shape, const OpFn& op,
              const char* name) {
  INFO(name << ", input " << in_shape << ", rank " << comm.rank());
  const int w = comm.world_size();
  const int r = comm.rank();
  const Tensor x0 = rank_tensor(in_shape, r, 1);
  const Tensor c = rank_tensor(out_shape, r, 51);
  Var x(x0, true);
  Var loss = sum(mul(op(comm, x), Var(c)));
  loss.backward();
  REQUIRE(x.grad().defined());
  const std::vector<double> analytic = x.grad().to_vector<double>();

  // F with rank q's element k moved by delta (every process evaluates it: one collective each).
  auto objective = [&](int q, std::int64_t k, double delta) {
    NoGradGuard no_grad;
    std::vector<double> v = x0.to_vector<double>();
    if (q == r) v[static_cast<std::size_t>(k)] += delta;
    const Var y = sum(mul(op(comm, Var(Tensor::from_vector<double>(v, in_shape))), Var(c)));
    return comm.all_reduce(y.value(), ReduceOperation::Sum).item<double>();
  };
  const double eps = 1e-6;
  for (int q = 0; q < w; ++q) {
    for (std::int64_t k = 0; k < in_shape.numel(); ++k) {
      const double numeric = (objective(q, k, eps) - objective(q, k, -eps)) / (2 * eps);
      if (q != r) continue;
      INFO("element " << k);
      const double a = analytic[static_cast<std::size_t>(k)];
      REQUIRE(std::abs(a - numeric) <= 1e-7 + 1e-5 * std::abs(numeric));
    }
  }
}

}  // namespace

TEST_CASE("the differentiable collectives pass a gradient check across MPI processes", "[mpi]") {
  Communicator comm = world();
  const std::int64_t w = comm.world_size();
  check_op(
      comm, {2, 3}, {2 * w, 3}, [](Communicator& c, const Var& x) { return dc::all_gather(x, c); },
      "all_gather");
  check_op(
      comm, {3, 1}, {3, w},
      [](Communicator& c, const Var& x) { return dc::all_gather_dim(x, -1, c); }, "all_gather_dim");
  check_op(
      comm, {w, 3}, {1, 3},
      [](Communicator& c, const Var& x) { return dc::reduce_scatter_sum(x, c); },
      "reduce_scatter_sum");
  check_op(
      comm, {2 * w, 1}, {2, 1},
      [](Communicator& c, const Var& x) { return dc::reduce_scatter_mean(x, c); },
      "reduce_scatter_mean");
  check_op(
      comm, {3, w}, {3, 1},
      [](Communicator& c, const Var& x) { return dc::reduce_scatter_sum_dim(x, -1, c); },
      "reduce_scatter_sum_dim");
  check_op(
      comm, {2, 3}, {2, 3}, [](Communicator& c, const Var& x) { return dc::all_reduce_sum(x, c); },
      "all_reduce_sum");
  check_op(
      comm, {2, 2}, {2, 2}, [](Communicator& c, const Var& x) { return dc::all_reduce_mean(x, c); },
      "all_reduce_mean");
  check_op(
      comm, {4}, {4}, [](Communicator& c, const Var& x) { return dc::all_reduce_max(x, c); },
      "all_reduce_max");
  check_op(
      comm, {3}, {3}, [](Communicator& c, const Var& x) { return dc::all_reduce_min(x, c); },
      "all_reduce_min");
  check_op(
      comm, {2, 3}, {2, 3},
      [w](Communicator& c, const Var& x) { return dc::broadcast(x, static_cast<int>(w) - 1, c); },
      "broadcast");
  check_op(
      comm, {w, 2}, {w, 2}, [](Communicator& c, const Var& x) { return dc::all_to_all(x, c); },
      "all_to_all");
}
