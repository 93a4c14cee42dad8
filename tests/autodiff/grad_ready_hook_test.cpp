// The gradient-ready hook (BackwardOptions::grad_ready, autodiff/engine.h): once per reached leaf,
// when its gradient is final in this backward; in the order of each leaf's last use; tied leaves
// after their last use; unused leaves never; again on every backward (retain_graph).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;

namespace {

Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }

/// A hook that records which leaf fired (its name in `names`, matched by handle) and its
/// gradient at that moment.
struct Recorder {
  std::vector<std::pair<std::string, Var>> names;
  std::vector<std::string> fired;
  std::vector<Tensor> grads;

  std::function<void(const Var&)> hook() {
    return [this](const Var& leaf) {
      std::string name = "?";
      for (const auto& [n, v] : names) {
        if (v.same(leaf)) name = n;
      }
      fired.push_back(name);
      grads.push_back(leaf.grad().clone());
    };
  }
};

BackwardOptions with_hook(Recorder& rec, bool retain_graph = false) {
  BackwardOptions options;
  options.retain_graph = retain_graph;
  options.grad_ready = rec.hook();
  return options;
}

}  // namespace

TEST_CASE(
    "grad_ready fires once per leaf, in the reverse of the layers' order, with the final "
    "gradient",
    "[autodiff]") {
  Var x(f64({1, 2}), false);
  Var w1(f64({3, 4}), true);
  Var w2(f64({5, 6}), true);
  Var w3(f64({7, 8}), true);
  Recorder rec;
  rec.names = {{"w1", w1}, {"w2", w2}, {"w3", w3}};
  Var loss = sum(mul(mul(mul(x, w1), w2), w3));
  loss.backward(with_hook(rec));
  REQUIRE(rec.fired == std::vector<std::string>{"w3", "w2", "w1"});
  REQUIRE_THAT(rec.grads[0], TensorEqual(w3.grad()));
  REQUIRE_THAT(rec.grads[1], TensorEqual(w2.grad()));
  REQUIRE_THAT(rec.grads[2], TensorEqual(w1.grad()));
  REQUIRE_THAT(w1.grad(), TensorEqual(f64({1 * 5 * 7, 2 * 6 * 8})));
}

TEST_CASE("a tied leaf fires after its last use with every contribution accumulated",
          "[autodiff]") {
  // w is used by the first and the last multiplication (tied); v in between.
  Var x(f64({1, 2}), false);
  Var w(f64({3, 4}), true);
  Var v(f64({5, 6}), true);
  Recorder rec;
  rec.names = {{"w", w}, {"v", v}};
  Var loss = sum(mul(mul(mul(x, w), v), w));  // x v w^2: d/dw = 2 x v w
  loss.backward(with_hook(rec));
  REQUIRE(rec.fired == std::vector<std::string>{"v", "w"});
  REQUIRE_THAT(rec.grads[1], TensorEqual(f64({2 * 1 * 5 * 3, 2 * 2 * 6 * 4})));
  REQUIRE_THAT(w.grad(), TensorEqual(rec.grads[1]));
}

TEST_CASE("a leaf used twice by one op fires once", "[autodiff]") {
  Var w(f64({3, 4}), true);
  Recorder rec;
  rec.names = {{"w", w}};
  sum(mul(w, w)).backward(with_hook(rec));
  REQUIRE(rec.fired == std::vector<std::string>{"w"});
  REQUIRE_THAT(rec.grads[0], TensorEqual(f64({6, 8})));
}

TEST_CASE("unused and frozen leaves never fire", "[autodiff]") {
  Var w(f64({3, 4}), true);
  Var unused(f64({1, 1}), true);
  Var frozen(f64({2, 2}), false);
  Recorder rec;
  rec.names = {{"w", w}, {"unused", unused}, {"frozen", frozen}};
  sum(mul(w, frozen)).backward(with_hook(rec));
  REQUIRE(rec.fired == std::vector<std::string>{"w"});
  REQUIRE_FALSE(unused.grad().defined());
}

TEST_CASE("grad_ready fires again on every backward of a retained graph, after accumulation",
          "[autodiff]") {
  Var x(f64({1, 2}), false);
  Var w(f64({3, 4}), true);
  Recorder rec;
  rec.names = {{"w", w}};
  Var loss = sum(mul(x, w));
  loss.backward(with_hook(rec, /*retain_graph=*/true));
  loss.backward(with_hook(rec));
  REQUIRE(rec.fired == std::vector<std::string>{"w", "w"});
  REQUIRE_THAT(rec.grads[0], TensorEqual(f64({1, 2})));
  REQUIRE_THAT(rec.grads[1], TensorEqual(f64({2, 4})));  // accumulated over both backwards
}

TEST_CASE("two graphs recorded the same way fire their leaves in the same order", "[autodiff]") {
  // What makes the order the same on every rank: it depends on the recording order only.
  auto order_of = [](bool extra_local_op) {
    Var a(f64({1, 2}), true);
    Var b(f64({3, 4}), true);
    Var c(f64({5, 6}), true);
    Recorder rec;
    rec.names = {{"a", a}, {"b", b}, {"c", c}};
    Var h = mul(a, b);
    if (extra_local_op) h = add(h, Var(f64({1, 1})));  // a rank-local op in between
    Var loss = sum(add(mul(h, c), mul(b, c)));
    loss.backward(with_hook(rec));
    return rec.fired;
  };
  const std::vector<std::string> first = order_of(false);
  REQUIRE(first == std::vector<std::string>{"c", "a", "b"});  // a and b: input order
  REQUIRE(order_of(false) == first);
  REQUIRE(order_of(true) == first);
}

TEST_CASE("a leaf root fires once with its seed", "[autodiff]") {
  Var w(f64({3, 4}), true);
  Recorder rec;
  rec.names = {{"w", w}};
  BackwardOptions options = with_hook(rec);
  options.seed = f64({1, 1});
  w.backward(options);
  REQUIRE(rec.fired == std::vector<std::string>{"w"});
  REQUIRE_THAT(rec.grads[0], TensorEqual(f64({1, 1})));
}
