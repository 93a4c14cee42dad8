// Differentiable collectives are collectives: every rank must agree on shape, dtype, root, axis
// and whether a gradient is wanted, in forward and in backward. Each disagreement must raise
// CollectiveError on every rank (never hang, never compute something wrong), and errors inside
// backward must come out of backward(). And ranks whose local graphs differ still issue their
// backward collectives in one order (creation order), where a graph walk would not.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

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
Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }

// Two orders a backward engine could take instead of creation order, both valid topological
// orders that depend on the graph's shape:
// - BreadthFirst: Kahn's algorithm with a FIFO queue (a node is queued once all its consumers ran);
// - DepthFirst: the reverse of a depth-first post-order that visits inputs in input order.
enum class Walk { BreadthFirst, DepthFirst };

void post_order(const Node* n, std::set<const Node*>& seen, std::vector<const Node*>& out) {
  if (!seen.insert(n).second) return;
  for (const Edge& e : n->edges()) {
    if (e.node) post_order(e.node.get(), seen, out);
  }
  out.push_back(n);
}

std::vector<const Node*> walk_order(const Var& root, Walk walk) {
  std::set<const Node*> seen;
  std::vector<const Node*> order;
  post_order(root.grad_fn().get(), seen, order);
  if (walk == Walk::DepthFirst) return {order.rbegin(), order.rend()};
  std::map<const Node*, int> consumers;
  for (const Node* n : order) {
    for (const Edge& e : n->edges()) {
      if (e.node) ++consumers[e.node.get()];
    }
  }
  std::vector<const Node*> out;
  std::deque<const Node*> ready = {root.grad_fn().get()};
  while (!ready.empty()) {
    const Node* n = ready.front();
    ready.pop_front();
    out.push_back(n);
    for (const Edge& e : n->edges()) {
      if (e.node && --consumers[e.node.get()] == 0) ready.push_back(e.node.get());
    }
  }
  return out;
}

// Which of the nodes of `a` and `b` a walk from `root` runs first: 'a' or 'b'.
char first_reached(const Var& root, Walk walk, const Var& a, const Var& b) {
  for (const Node* n : walk_order(root, walk)) {
    if (n == a.grad_fn().get()) return 'a';
    if (n == b.grad_fn().get()) return 'b';
  }
  return '-';
}

// What each rank saw: its loss and gradients, and which collective each graph walk reaches first.
struct OrderResult {
  Tensor loss, grad_x, grad_y;
  char breadth_first = '-', depth_first = '-';
  std::vector<std::string> issued;  // the order the engine issued the backward collectives
};

// An identity op that logs `name` when its backward runs.
Var tap(const Var& x, const char* name, std::vector<std::string>& log) {
  return make_var(x.value(), "tap", {x}, [name, &log](const Tensor& g, GradInputs& grads) {
    log.emplace_back(name);
    grads[0] = g;
  });
}

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

// Issue 5 §3: ranks whose local graphs differ. Both ranks create a = all_reduce_sum(x) then
// b = all_reduce_sum(y) (same op, shape and dtype), but rank 0 puts its extra local ops on a's
// branch and rank 1 on b's, and rank 1 adds b's term first. A graph walk would reach the two
// collective nodes in opposite orders on the two ranks (checked below on the recorded graphs), so
// rank 0's backward all_reduce for b would meet rank 1's for a: the calls are indistinguishable
// (same op, shape and dtype), so no error would be raised, but both ranks would sum the wrong
// gradients and the closed-form values below would fail. The engine's creation order issues b's
// then a's on both ranks.
TEST_CASE("two like collectives consumed in different local orders give closed-form gradients",
          "[autodiff][collective]") {
  auto out = run_group(2, [](Communicator& comm) {
    const int r = comm.rank();
    Var x(r == 0 ? f64({1, 2}) : f64({3, -1}), true);       // a = [4, 1]
    Var y(r == 0 ? f64({0.5, 1}) : f64({-2, 0.25}), true);  // b = [-1.5, 1.25]
    Var a = dc::all_reduce_sum(x, comm);
    Var b = dc::all_reduce_sum(y, comm);
    // L_0 = 3 sum(a^2) + sum(b); L_1 = 2 sum(b^2) + 5 sum(a).
    Var loss = r == 0 ? sum(mul(mul(a, a), 3.0)) + sum(b) : sum(mul(mul(b, b), 2.0)) + sum(a * 5.0);
    OrderResult res;
    res.breadth_first = first_reached(loss, Walk::BreadthFirst, a, b);
    res.depth_first = first_reached(loss, Walk::DepthFirst, a, b);
    loss.backward();
    res.loss = loss.value();
    res.grad_x = x.grad();
    res.grad_y = y.grad();
    return res;
  });
  for (std::size_t r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(out[r].ok());  // no CollectiveError
    // F = L_0 + L_1: dF/dx_r = 6a + 5 = [29, 11], dF/dy_r = 1 + 4b = [-5, 6] on both ranks.
    CHECK_THAT(out[r].value().grad_x, TensorEqual(f64({29, 11})));
    CHECK_THAT(out[r].value().grad_y, TensorEqual(f64({-5, 6})));
  }
  CHECK_THAT(out[0].value().loss, TensorEqual(Tensor::scalar(50.75, DType::F64)));
  CHECK_THAT(out[1].value().loss, TensorEqual(Tensor::scalar(32.625, DType::F64)));
  // The test can tell the orders apart: both graph walks disagree between the ranks.
  CHECK(out[0].value().breadth_first == 'b');
  CHECK(out[1].value().breadth_first == 'a');
  CHECK(out[0].value().depth_first == 'b');
  CHECK(out[1].value().depth_first == 'a');
}

// This test fails under any engine that orders by graph walk (breadth- or depth-first, see
// Walk): the two collectives now differ in kind (all_reduce_sum and all_gather), and on these
// graphs both walks reach all_gather's node first on rank 0 and all_reduce_sum's first on rank 1
// (asserted below). Such an engine would issue reduce_scatter (all_gather's backward) on rank 0
// while rank 1 issues all_reduce: CollectiveKindMismatch out of backward() on both ranks, and the
// logged order would differ. Creation order issues all_gather's backward, then all_reduce's, on
// every rank, whatever the local graphs look like.
TEST_CASE("backward issues collectives in reverse creation order where graph walks would disagree",
          "[autodiff][collective]") {
  auto out = run_group(2, [](Communicator& comm) {
    const int r = comm.rank();
    OrderResult res;
    Var x(r == 0 ? f64({1, 2}) : f64({3, -1}), true);
    Var y(r == 0 ? f64({0.5, 1}) : f64({-2, 0.25}), true);
    // A tap's only consumer is the collective recorded right after it, so the tap's backward runs
    // right after that collective's: the log is the order of the backward collectives.
    Var a = dc::all_reduce_sum(tap(x, "all_reduce_sum", res.issued), comm);  // [4, 1]
    Var b = dc::all_gather(tap(y, "all_gather", res.issued), comm);          // [0.5, 1, -2, 0.25]
    // L_0 = sum(a^2) / 2 + sum(b * w), w = [1, 2, 3, 4]; L_1 = sum(b^2) / 2 + sum(a).
    Var loss = r == 0 ? sum(mul(mul(a, a), 0.5)) + sum(b * Var(f64({1, 2, 3, 4})))
                      : sum(mul(mul(b, b), 0.5)) + sum(a);
    res.breadth_first = first_reached(loss, Walk::BreadthFirst, a, b);
    res.depth_first = first_reached(loss, Walk::DepthFirst, a, b);
    loss.backward();
    res.grad_x = x.grad();
    res.grad_y = y.grad();
    return res;
  });
  for (std::size_t r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(out[r].ok());
    CHECK(out[r].value().issued == std::vector<std::string>{"all_gather", "all_reduce_sum"});
    // dF/da = a + 1 = [5, 2]; dF/db = w + b = [1.5, 3, 1, 4.25], block r to rank r.
    CHECK_THAT(out[r].value().grad_x, TensorEqual(f64({5, 2})));
  }
  CHECK_THAT(out[0].value().grad_y, TensorEqual(f64({1.5, 3})));
  CHECK_THAT(out[1].value().grad_y, TensorEqual(f64({1, 4.25})));
  CHECK(out[0].value().breadth_first == 'b');
  CHECK(out[1].value().breadth_first == 'a');
  CHECK(out[0].value().depth_first == 'b');
  CHECK(out[1].value().depth_first == 'a');
}
