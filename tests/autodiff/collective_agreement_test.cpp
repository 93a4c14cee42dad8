// Differentiable collectives are collectives: every rank must agree on shape, dtype, root, axis
// and whether a gradient is wanted, in forward and in backward. Each disagreement must raise
// CollectiveError on every rank (never hang, never compute something wrong), and errors inside
// backward must come out of backward().
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "tensor/tensor.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;
using ruccl::testing::error_kind;
using ruccl::testing::TensorEqual;

namespace {

// A short deadline: a test that wrongly waits fails in seconds, not after the 300 s default.
CommunicatorOptions quick() {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(20);
  return o;
}

template <typename Fn>
auto run_group(int world, Fn fn) {
  return testing::run_group(world, std::move(fn), quick());
}

// Every rank threw a CollectiveError of `kind`.
template <typename T>
void require_everywhere(const std::vector<testing::RankOutcome<T>>& out, CollectiveErrorKind kind) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(error_kind(out[r]) == kind);
  }
}

Tensor f64(const Shape& s, double v) { return Tensor::full(s, v, DType::F64); }

}  // namespace

TEST_CASE("ranks that disagree on whether the input needs a gradient all raise",
          "[autodiff][collective]") {
  auto by_flag = run_group(2, [](Communicator& comm) {
    return dc::all_reduce_sum(Var(f64({2}, 1.0), comm.rank() == 0), comm).value();
  });
  require_everywhere(by_flag, CollectiveErrorKind::ArgumentMismatch);
  CHECK(by_flag[1].message().find("requires_grad") != std::string::npos);

  auto by_grad_mode = run_group(3, [](Communicator& comm) {
    Var x(f64({2}, 1.0), true);
    if (comm.rank() == 2) {
      NoGradGuard no_grad;  // grad mode off on one rank only
      return dc::all_gather(x, comm).value();
    }
    return dc::all_gather(x, comm).value();
  });
  require_everywhere(by_grad_mode, CollectiveErrorKind::ArgumentMismatch);
}

TEST_CASE("ranks that disagree on the axis all raise; equal axes written differently agree",
          "[autodiff][collective]") {
  auto differ = run_group(2, [](Communicator& comm) {
    return dc::all_gather_dim(Var(f64({2, 2}, 1.0), true), comm.rank(), comm).value();
  });
  require_everywhere(differ, CollectiveErrorKind::ArgumentMismatch);
  CHECK(differ[0].message().find("axis") != std::string::npos);

  auto agree = run_group(2, [](Communicator& comm) {
    return dc::all_gather_dim(Var(f64({2, 2}, 1.0), true), comm.rank() == 0 ? 1 : -1, comm).value();
  });
  for (const auto& o : agree) CHECK(o.value().shape() == Shape{2, 4});
}

TEST_CASE("an axis out of range raises on every rank, whether all ranks or some pass it",
          "[autodiff][collective]") {
  auto all_bad = run_group(3, [](Communicator& comm) {
    return dc::reduce_scatter_sum_dim(Var(f64({3, 3}, 1.0), true), 2, comm).value();
  });
  for (const auto& o : all_bad) {
    INFO(o.message());
    CHECK_THROWS_AS(o.value(), IndexError);
    CHECK(o.message().find("reduce_scatter_sum_dim") != std::string::npos);
  }
  auto some_bad = run_group(3, [](Communicator& comm) {
    return dc::all_gather_dim(Var(f64({3, 3}, 1.0)), comm.rank() == 1 ? -3 : -1, comm).value();
  });
  // Rank 1 takes part with an empty stand-in: the shapes disagree, and rank 1 says why.
  require_everywhere(some_bad, CollectiveErrorKind::ShapeMismatch);
  CHECK(some_bad[1].message().find("axis -3 is out of range") != std::string::npos);
}

TEST_CASE("shape, dtype, root and divisibility errors are raised on every rank",
          "[autodiff][collective]") {
  auto shape = run_group(2, [](Communicator& comm) {
    return dc::all_reduce_mean(Var(f64({2 + comm.rank()}, 1.0), true), comm).value();
  });
  require_everywhere(shape, CollectiveErrorKind::ShapeMismatch);

  auto dtype = run_group(2, [](Communicator& comm) {
    const DType d = comm.rank() == 0 ? DType::F32 : DType::F64;
    return dc::all_reduce_max(Var(Tensor::ones({2}, d), true), comm).value();
  });
  require_everywhere(dtype, CollectiveErrorKind::DTypeMismatch);

  auto root = run_group(2, [](Communicator& comm) {
    return dc::broadcast(Var(f64({2}, 1.0), true), comm.rank(), comm).value();
  });
  require_everywhere(root, CollectiveErrorKind::RootMismatch);

  auto divisible = run_group(2, [](Communicator& comm) {
    return dc::reduce_scatter_mean_dim(Var(f64({2, 3}, 1.0), true), -1, comm).value();
  });
  require_everywhere(divisible, CollectiveErrorKind::InvalidArgument);
  CHECK(divisible[0].message().find("axis -1") != std::string::npos);
}

TEST_CASE("backward raises on every rank when the ranks' backward passes reach different nodes",
          "[autodiff][collective]") {
  // Rank 0's loss uses the all_reduce, rank 1's the all_gather: their first backward collectives
  // differ in kind.
  auto kinds = run_group(2, [](Communicator& comm) {
    Var x(f64({2}, 1.0), true);
    Var a = dc::all_reduce_sum(x, comm);
    Var b = dc::all_gather(x, comm);
    (comm.rank() == 0 ? sum(a) : sum(b)).backward();
  });
  require_everywhere(kinds, CollectiveErrorKind::CollectiveKindMismatch);

  // The same Communicator call (all_reduce Sum of [2]) from different differentiable ops: the op
  // word tells them apart.
  auto ops = run_group(2, [](Communicator& comm) {
    Var x(f64({2}, 1.0), true);
    Var a = dc::all_reduce_sum(x, comm);
    Var b = dc::all_reduce_max(x, comm);
    (comm.rank() == 0 ? sum(a) : sum(b)).backward();
  });
  require_everywhere(ops, CollectiveErrorKind::ArgumentMismatch);
}

TEST_CASE(
    "a collective output one rank's loss ignores fails at that rank's next collective; "
    "adding 0 * output fixes it",
    "[autodiff][collective]") {
  auto ignored = run_group(2, [](Communicator& comm) {
    Var x(f64({2}, 1.0), true);
    Var a = dc::all_reduce_sum(x, comm);
    Var loss = comm.rank() == 0 ? sum(x * 2.0) : sum(a);
    loss.backward();  // rank 0 runs no backward collective; rank 1 waits in one
    return comm.all_reduce(x.grad(), ReduceOperation::Sum);  // rank 0's next call: a mismatch
  });
  require_everywhere(ignored, CollectiveErrorKind::ArgumentMismatch);

  auto fixed = run_group(2, [](Communicator& comm) {
    Var x(f64({2}, 1.0), true);
    Var a = dc::all_reduce_sum(x, comm);
    Var loss = comm.rank() == 0 ? sum(x * 2.0) + sum(a) * 0.0 : sum(a);
    loss.backward();
    return x.grad();
  });
  // d/dx_r of (2 sum(x_0) + 0 * sum(a)) + sum(a) = 2 [r == 0] + 1.
  CHECK_THAT(fixed[0].value(), TensorEqual(f64({2}, 3.0)));
  CHECK_THAT(fixed[1].value(), TensorEqual(f64({2}, 1.0)));
}

TEST_CASE("an error inside a backward collective comes out of backward() on every rank",
          "[autodiff][collective]") {
  auto out = run_group(3, [](Communicator& comm) {
    Var x(f64({3}, 1.0), true);
    Var loss = sum(dc::reduce_scatter_sum(x, comm));
    if (comm.rank() == 1) comm.abort("rank 1 gives up before backward");
    loss.backward();
  });
  require_everywhere(out, CollectiveErrorKind::Aborted);
  CHECK(out[0].message().find("rank 1 gives up") != std::string::npos);
}
