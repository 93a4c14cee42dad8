// The tape and the engine: seeds, accumulation, the stored gradient's layout, retain_graph,
// NoGradGuard, errors, ordering, custom ops, and threads.
#include <catch2/catch.hpp>

#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }
Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

// An identity op that logs its name when its backward runs.
Var tap(const Var& x, std::string name, std::vector<std::string>& log) {
  return make_var(x.value(), "tap", {x},
                  [name = std::move(name), &log](const Tensor& g, GradInputs& grads) {
                    log.push_back(name);
                    grads[0] = g;
                  });
}

}  // namespace

TEST_CASE("backward of a scalar seeds 1 and fills the leaves' gradients", "[autodiff]") {
  Var x(f64({1, 2, 3}), true);
  Var y = sum(mul(x, x));
  REQUIRE(y.requires_grad());
  REQUIRE_FALSE(y.is_leaf());
  y.backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({2, 4, 6})));
  CHECK_FALSE(y.grad().defined());  // non-leaves hold no gradient
}

TEST_CASE("gradients accumulate over several uses and over backward passes until zero_grad",
          "[autodiff]") {
  Var x(f64({1, -2}), true);
  sum(add(mul(x, x), x)).backward();  // 2x + 1
  CHECK_THAT(x.grad(), TensorEqual(f64({3, -3})));
  sum(add(mul(x, x), x)).backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({6, -6})));
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  sum(mul(x, 3.0)).backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({3, 3})));
  const Tensor before = x.grad();
  x.zero_grad(/*set_to_none=*/false);
  CHECK_THAT(x.grad(), TensorEqual(f64({0, 0})));
  CHECK(x.grad().storage() == before.storage());  // zeroed in place, as torch's grad.zero_()
}

TEST_CASE("a stored gradient owns its memory even when a rule passes one tensor to two inputs",
          "[autodiff]") {
  Var a(f64({1, 2}), true);
  Var b(f64({3, 4}), true);
  add(a, b).backward(f64({1, 1}));
  REQUIRE(a.grad().is_contiguous());
  CHECK(a.grad().storage() != b.grad().storage());
}

TEST_CASE("a dense non-contiguous leaf keeps its gradient in its own layout, across passes",
          "[autodiff]") {
  // PyTorch's AccumulateGrad contract: a transposed or permuted leaf gets a gradient with its
  // strides; a leaf with gaps (narrow) or overlaps (expand) gets a contiguous one.
  Var t(f64({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1), true);  // [3, 2], strides [1, 3]
  REQUIRE(t.value().strides() == Shape{1, 3});
  Tensor w = f64({1, 2, 3, 4, 5, 6}, {3, 2});
  sum(mul(mul(t, t), Var(w))).backward();  // 2 t w
  CHECK(t.grad().strides() == t.value().strides());
  CHECK_THAT(t.grad(), TensorEqual(f64({2, 16, 12, 40, 30, 72}, {3, 2})));
  sum(mul(t, Var(w))).backward();  // + w: the sum keeps the layout
  CHECK(t.grad().strides() == t.value().strides());
  CHECK_THAT(t.grad(), TensorEqual(f64({3, 18, 15, 44, 35, 78}, {3, 2})));
  CHECK(t.grad().storage() != t.value().storage());
  t.zero_grad(/*set_to_none=*/false);  // zeroed in place: the layout stays
  CHECK(t.grad().strides() == t.value().strides());
  CHECK_THAT(t.grad(), TensorEqual(Tensor::zeros({3, 2}, DType::F64)));

  // A rule that hands one tensor to both inputs: each stored gradient owns its memory.
  Var u(f64({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1), true);
  Var v(f64({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1), true);
  add(u, v).backward(f64({1, 2, 3, 4, 5, 6}, {3, 2}));
  CHECK(u.grad().strides() == Shape{1, 3});
  CHECK(u.grad().storage() != v.grad().storage());
  CHECK_THAT(v.grad(), TensorEqual(f64({1, 2, 3, 4, 5, 6}, {3, 2})));

  Var p(Tensor::arange(0, 24, 1, DType::F64).reshape({2, 3, 4}).permute({2, 0, 1}), true);
  sum(mul(p, p)).backward();
  CHECK(p.grad().strides() == p.value().strides());  // [1, 12, 4]
  CHECK_THAT(p.grad(), TensorEqual(ruccl::mul(p.value(), 2.0)));

  Var gaps(f64({1, 2, 3, 4, 5, 6}, {2, 3}).narrow(1, 0, 2), true);  // strides [3, 1]: a gap
  Var overlaps(f64({1, 2}, {2, 1}).expand({2, 3}), true);           // stride 0
  sum(mul(gaps, gaps)).backward();
  sum(mul(overlaps, 3.0)).backward();
  CHECK(gaps.grad().is_contiguous());
  CHECK_THAT(gaps.grad(), TensorEqual(f64({2, 4, 8, 10}, {2, 2})));
  CHECK(overlaps.grad().is_contiguous());
  CHECK_THAT(overlaps.grad(), TensorEqual(Tensor::full({2, 3}, 3.0, DType::F64)));
}

TEST_CASE("a non-scalar root needs a seed of its own shape", "[autodiff]") {
  Var x(f64({1, 2, 3}), true);
  Var y = mul(x, 2.0);
  CHECK_THROWS_AS(y.backward(), ShapeError);
  CHECK_THROWS_AS(y.backward(f64({1, 1})), ShapeError);
  y.backward(f64({1, 0, -1}));
  CHECK_THAT(x.grad(), TensorEqual(f64({2, 0, -2})));
}

TEST_CASE("backward on a value that needs no gradient is an AutodiffError", "[autodiff]") {
  Var c(f64({1, 2}));
  CHECK_THROWS_AS(sum(c).backward(), AutodiffError);
  CHECK_THROWS_AS(Var().backward(), AutodiffError);
  CHECK_THROWS_AS(Var(Tensor::from_vector<std::int64_t>({1, 2}), true), DTypeError);
}

TEST_CASE("a second backward through a freed graph is an error unless the graph is retained",
          "[autodiff]") {
  Var x(f64({1, 2}), true);
  Var y = sum(mul(x, x));
  y.backward();
  REQUIRE(y.grad_fn()->released());
  try {
    y.backward();
    FAIL("expected an AutodiffError");
  } catch (const AutodiffError& e) {
    CHECK_THAT(e.what(), Catch::Contains("freed") && Catch::Contains("retain_graph"));
  }
  Var z = sum(mul(x, x));
  x.zero_grad();
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({4, 8})));
}

TEST_CASE("NoGradGuard records nothing on its thread and restores the mode", "[autodiff]") {
  Var x(f64({1, 2}), true);
  {
    NoGradGuard guard;
    CHECK_FALSE(is_grad_enabled());
    Var y = mul(x, x);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
    {
      EnableGradGuard enable;
      CHECK(mul(x, x).requires_grad());
    }
    CHECK_FALSE(is_grad_enabled());
    bool other_thread_enabled = false;
    std::thread([&] { other_thread_enabled = is_grad_enabled(); }).join();
    CHECK(other_thread_enabled);
  }
  CHECK(is_grad_enabled());
  CHECK(mul(x, x).requires_grad());
}

TEST_CASE("detach cuts a value from the tape", "[autodiff]") {
  Var x(f64({2, 3}), true);
  Var d = mul(x, x).detach();
  CHECK_FALSE(d.requires_grad());
  sum(add(mul(d, x), x)).backward();  // d is a constant: d + 1
  CHECK_THAT(x.grad(), TensorEqual(f64({5, 10})));
}

TEST_CASE("a leaf frozen after recording gets no gradient; inputs that need none get none",
          "[autodiff]") {
  Var w(f64({1, 2}), true);
  Var b(f64({3, 4}), true);
  Var c(f64({5, 6}));
  Var y = sum(mul(add(w, b), c));
  b.set_requires_grad(false);
  y.backward();
  CHECK_THAT(w.grad(), TensorEqual(f64({5, 6})));
  CHECK_FALSE(b.grad().defined());
  CHECK_FALSE(c.grad().defined());
  CHECK_THROWS_AS(y.set_requires_grad(false), AutodiffError);
}

TEST_CASE("set_value and set_grad check shape and dtype", "[autodiff]") {
  Var w(f64({1, 2}), true);
  CHECK_THROWS_AS(w.set_value(f64({1, 2, 3})), ShapeError);
  CHECK_THROWS_AS(w.set_value(Tensor::from_vector<float>({1, 2})), DTypeError);
  CHECK_THROWS_AS(w.set_grad(f64({1})), ShapeError);
  w.set_value(f64({7, 8}));
  CHECK_THAT(w.value(), TensorEqual(f64({7, 8})));
  Var y = mul(w, 2.0);
  CHECK_THROWS_AS(y.set_value(f64({1, 2})), AutodiffError);
}

TEST_CASE("backward runs nodes in descending creation order, not in graph-walk order",
          "[autodiff]") {
  std::vector<std::string> log;
  Var x(f64({1, 2}), true);
  Var a = tap(x, "A", log);
  Var b = tap(x, "B", log);
  Var c = tap(a, "C", log);  // a depth-first walk from add would run C, A before B
  REQUIRE(a.grad_fn()->sequence_nr() < b.grad_fn()->sequence_nr());
  REQUIRE(b.grad_fn()->sequence_nr() < c.grad_fn()->sequence_nr());
  sum(add(b, c)).backward();
  CHECK(log == std::vector<std::string>{"C", "B", "A"});
  CHECK_THAT(x.grad(), TensorEqual(f64({2, 2})));
}

TEST_CASE("a custom op written with make_var passes gradcheck", "[autodiff]") {
  auto cube = [](const Var& x) {
    Tensor v = x.value();
    return make_var(ruccl::mul(ruccl::mul(v, v), v), "cube", {x},
                    [v](const Tensor& g, GradInputs& grads) {
                      grads[0] = ruccl::mul(g, ruccl::mul(ruccl::mul(v, v), 3.0));
                    });
  };
  Var x(f64({0.5, -1.5, 2.0}), true);
  GradcheckReport r = gradcheck([&](const std::vector<Var>& in) { return cube(in[0]); }, {x});
  INFO(r.message);
  CHECK(r.ok);
  CHECK_FALSE(x.grad().defined());  // gradcheck works on copies
}

TEST_CASE("gradcheck reports a wrong rule with the worst element and both values", "[autodiff]") {
  auto wrong = [](const Var& x) {
    return make_var(ruccl::mul(x.value(), x.value()), "wrong_square", {x},
                    [](const Tensor& g, GradInputs& grads) { grads[0] = g; });  // should be 2xg
  };
  Var x(f64({1, 3}), true);
  GradcheckReport r = gradcheck([&](const std::vector<Var>& in) { return wrong(in[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK(r.input == 0);
  CHECK(r.element == 1);
  CHECK(r.output_element == 1);
  CHECK(r.analytic == Approx(1.0));
  CHECK(r.numeric == Approx(6.0));
  CHECK(r.abs_error == Approx(5.0));
  CHECK_THAT(r.message, Catch::Contains("input 0 element [1]") && Catch::Contains("analytic"));
}

TEST_CASE("gradcheck flags a gradient for an input that does not require grad", "[autodiff]") {
  Var a(f64({1, 2}), true);
  Var b(f64({3, 4}), false);
  auto leak = [](const Var& x, const Var& y) {
    // A buggy op that writes into the gradient of an input that needs none.
    return make_var(ruccl::mul(x.value(), y.value()), "leak", {x},
                    [y_leaf = y](const Tensor& g, GradInputs& grads) {
                      grads[0] = g;
                      const_cast<Var&>(y_leaf).set_grad(g);
                    });
  };
  GradcheckReport r =
      gradcheck([&](const std::vector<Var>& in) { return leak(in[0], in[1]); }, {a, b});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Contains("does not require grad"));
  CHECK_THROWS_AS(gradcheck([](const std::vector<Var>& in) { return in[0]; },
                            {Var(Tensor::from_vector<float>({1}), true)}),
                  DTypeError);
}

TEST_CASE("a rule returning a gradient of the wrong shape is an AutodiffError naming the op",
          "[autodiff]") {
  Var x(f64({1, 2}), true);
  Var y = make_var(x.value(), "bad_rule", {x}, [](const Tensor&, GradInputs& grads) {
    grads[0] = f64({1, 2, 3});
  });
  try {
    sum(y).backward();
    FAIL("expected an AutodiffError");
  } catch (const AutodiffError& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad_rule") && Catch::Contains("shape"));
  }
}

TEST_CASE("an exception inside a backward rule leaves backward() and the tape stays usable",
          "[autodiff]") {
  Var x(f64({1, 2}), true);
  Var shared = mul(x, 2.0);
  Var y = make_var(shared.value(), "throws", {shared},
                   [](const Tensor&, GradInputs&) { throw ValueError("boom"); });
  CHECK_THROWS_AS(sum(add(y, shared)).backward(), ValueError);
  CHECK_FALSE(x.grad().defined());
  sum(mul(shared, shared)).backward();  // the shared node ran nowhere: its graph is intact
  CHECK_THAT(x.grad(), TensorEqual(f64({8, 16})));
}

TEST_CASE("nodes with more inputs than fit inline keep every edge", "[autodiff]") {
  Var a(f64({1}), true), b(f64({2}), true), c(f64({3}), true);
  Var y = cat({a, b, c, a}, 0);
  REQUIRE(y.grad_fn()->num_inputs() == 4);
  y.backward(f64({1, 10, 100, 1000}));
  CHECK_THAT(a.grad(), TensorEqual(f64({1001})));
  CHECK_THAT(b.grad(), TensorEqual(f64({10})));
  CHECK_THAT(c.grad(), TensorEqual(f64({100})));
}

namespace {

// A small regression model trained by hand-written SGD; returns the final parameters.
std::vector<double> train_model(std::uint64_t seed) {
  Generator gen(seed);
  Var w(Tensor::randn({4, 3}, gen, DType::F64), true);
  Var b(Tensor::zeros({3}, DType::F64), true);
  Tensor x = Tensor::randn({8, 4}, gen, DType::F64);
  Tensor y = Tensor::randn({8, 3}, gen, DType::F64);
  for (int step = 0; step < 20; ++step) {
    Var pred = add(matmul(Var(x), tanh(w)), b);
    Var loss = mse_loss(pred, Var(y));
    w.zero_grad();
    b.zero_grad();
    loss.backward();
    w.set_value(ruccl::sub(w.value(), ruccl::mul(w.grad(), 0.1)));
    b.set_value(ruccl::sub(b.value(), ruccl::mul(b.grad(), 0.1)));
  }
  std::vector<double> out = w.value().to_vector<double>();
  for (double v : b.value().to_vector<double>()) out.push_back(v);
  return out;
}

}  // namespace

TEST_CASE("four threads training four models at once match training them one after another",
          "[autodiff]") {
  constexpr int kModels = 4;
  std::vector<std::vector<double>> sequential;
  for (int m = 0; m < kModels; ++m) sequential.push_back(train_model(100 + m));
  std::vector<std::vector<double>> parallel(kModels);
  std::vector<std::exception_ptr> errors(kModels);
  std::vector<std::thread> threads;
  for (int m = 0; m < kModels; ++m) {
    threads.emplace_back([&, m] {
      try {
        parallel[m] = train_model(100 + m);
      } catch (...) {
        errors[m] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int m = 0; m < kModels; ++m) {
    if (errors[m]) std::rethrow_exception(errors[m]);
    CHECK(parallel[m] == sequential[m]);  // bit-identical
  }
}
