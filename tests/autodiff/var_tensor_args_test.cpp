// A Tensor passes where a Var is expected (a constant: no gradient, no node), and an all-Tensor
// call stays a Tensor op: the compile-time checks below pin which overload every spelling picks,
// with and without using-directives, through ADL and from inside the autodiff and nn namespaces.
#include <catch2/catch.hpp>

#include <type_traits>
#include <utility>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

// ---- no using-directive: unqualified calls found by ADL alone ----------------------------------
namespace adl_only {

using ruccl::Tensor;
using ruccl::autodiff::Var;

// Only in unevaluated operands: the static type each spelling has.
const Tensor& t();
const Var& v();
const Tensor& cond();

template <typename E>
constexpr bool is_tensor = std::is_same_v<E, Tensor>;
template <typename E>
constexpr bool is_var = std::is_same_v<E, Var>;

// All-Tensor calls: the Tensor op (exact match) beats autodiff's through the Var conversion.
static_assert(is_tensor<decltype(matmul(t(), t()))>);
static_assert(is_tensor<decltype(add(t(), t()))>);
static_assert(is_tensor<decltype(sub(t(), 2.0))>);
static_assert(is_tensor<decltype(mul(t(), t()))>);
static_assert(is_tensor<decltype(div(t(), 3))>);
static_assert(is_tensor<decltype(pow(t(), 2.0))>);
static_assert(is_tensor<decltype(maximum(t(), t()))>);
static_assert(is_tensor<decltype(exp(t()))>);
static_assert(is_tensor<decltype(log(t()))>);
static_assert(is_tensor<decltype(relu(t()))>);
static_assert(is_tensor<decltype(gelu(t()))>);
static_assert(is_tensor<decltype(tanh(t()))>);
static_assert(is_tensor<decltype(sigmoid(t()))>);
static_assert(is_tensor<decltype(neg(t()))>);
static_assert(is_tensor<decltype(where(cond(), t(), t()))>);
static_assert(is_tensor<decltype(sum(t()))>);
static_assert(is_tensor<decltype(sum(t(), 1, true))>);
static_assert(is_tensor<decltype(mean(t(), {0, 1}))>);
static_assert(is_tensor<decltype(max(t(), 0))>);
static_assert(is_tensor<decltype(softmax(t(), 1))>);
static_assert(is_tensor<decltype(log_softmax(t(), -1))>);
static_assert(is_tensor<decltype(index_select(t(), 0, t()))>);
static_assert(is_tensor<decltype(gather(t(), 0, t()))>);
static_assert(is_tensor<decltype(t() + t())>);
static_assert(is_tensor<decltype(t() * 2.0)>);
static_assert(is_tensor<decltype(2.0 - t())>);
static_assert(is_tensor<decltype(-t())>);

// A Var on either side: the autodiff op, the Tensor made a constant Var.
static_assert(is_var<decltype(matmul(v(), t()))>);
static_assert(is_var<decltype(matmul(t(), v()))>);
static_assert(is_var<decltype(add(t(), v()))>);
static_assert(is_var<decltype(mul(v(), t()))>);
static_assert(is_var<decltype(maximum(t(), v()))>);
static_assert(is_var<decltype(pow(v(), t()))>);
static_assert(is_var<decltype(where(cond(), v(), t()))>);
static_assert(is_var<decltype(where(cond(), t(), v()))>);
static_assert(is_var<decltype(v() + t())>);
static_assert(is_var<decltype(t() - v())>);
static_assert(is_var<decltype(t() * v())>);
static_assert(is_var<decltype(t() / v())>);
static_assert(is_var<decltype(mse_loss(v(), t()))>);
static_assert(is_var<decltype(mse_loss(t(), v()))>);
static_assert(is_var<decltype(linear(v(), t(), t()))>);

}  // namespace adl_only

// ---- code inside ruccl::autodiff (ordinary lookup finds autodiff's ops first) ------------------
namespace ruccl::autodiff::inside {

const Tensor& t();
const Var& v();

static_assert(std::is_same_v<decltype(matmul(t(), t())), Tensor>);
static_assert(std::is_same_v<decltype(sum(t(), 0)), Tensor>);
static_assert(std::is_same_v<decltype(relu(t())), Tensor>);
static_assert(std::is_same_v<decltype(add(t(), 1.0)), Tensor>);
static_assert(std::is_same_v<decltype(softmax(t(), 0)), Tensor>);
static_assert(std::is_same_v<decltype(t() + t()), Tensor>);
static_assert(std::is_same_v<decltype(matmul(v(), t())), Var>);
static_assert(std::is_same_v<decltype(sum(v(), 0)), Var>);
static_assert(std::is_same_v<decltype(t() * v()), Var>);

}  // namespace ruccl::autodiff::inside

// ---- model code in ruccl::nn (cross_entropy / mse_loss are using-declarations there) -----------
namespace ruccl::nn::inside {

const Tensor& t();
const Var& v();

static_assert(std::is_same_v<decltype(matmul(t(), t())), Tensor>);
static_assert(std::is_same_v<decltype(matmul(v(), t())), Var>);
static_assert(std::is_same_v<decltype(mse_loss(v(), t())), Var>);
static_assert(std::is_same_v<decltype(cross_entropy(t(), t())), Var>);

}  // namespace ruccl::nn::inside

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

// ---- both namespaces brought in by using-directives (how tests and examples are written) -------
static_assert(std::is_same_v<decltype(matmul(adl_only::t(), adl_only::t())), Tensor>);
static_assert(std::is_same_v<decltype(sum(adl_only::t())), Tensor>);
static_assert(std::is_same_v<decltype(mean(adl_only::t(), 0, true)), Tensor>);
static_assert(std::is_same_v<decltype(exp(adl_only::t())), Tensor>);
static_assert(std::is_same_v<decltype(adl_only::t() / 2.0), Tensor>);
static_assert(std::is_same_v<decltype(matmul(adl_only::v(), adl_only::t())), Var>);
static_assert(std::is_same_v<decltype(cat({adl_only::v(), adl_only::t()})), Var>);

namespace {

Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

}  // namespace

TEST_CASE("matmul of a trainable Var and a Tensor records one node and grads only the Var",
          "[autodiff]") {
  Var x(f64({1, 2, 3, 4}, {2, 2}), true);
  const Tensor w = f64({0.5, -1, 2, 0.25}, {2, 2});
  Var y = autodiff::matmul(x, w);  // w becomes a constant Var
  REQUIRE(y.requires_grad());
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(std::string(y.grad_fn()->name()) == "matmul");
  REQUIRE(y.grad_fn()->num_inputs() == 2);
  CHECK_FALSE(y.grad_fn()->edges()[1].needed());  // the Tensor side wants no gradient
  CHECK_THAT(y.value(), TensorEqual(ruccl::matmul(x.value(), w)));
  sum(y).backward();
  // d sum(x w) / d x = ones [2, 2] @ w^T: row sums of w for every row.
  CHECK_THAT(x.grad(), TensorEqual(f64({-0.5, 2.25, -0.5, 2.25}, {2, 2})));
}

TEST_CASE("an unqualified mixed call resolves through ADL to the autodiff op", "[autodiff]") {
  Var x(f64({1, -2}, {1, 2}), true);
  const Tensor w = f64({3, 4}, {2, 1});
  const Tensor b = f64({0.5}, {1});
  Var y = relu(matmul(x, w) + b) * w.transpose(0, 1);  // Var * Tensor too
  sum(y).backward();
  // matmul = 3 - 8 = -5, + 0.5 = -4.5: relu cuts it, so the gradient is 0 everywhere.
  CHECK_THAT(x.grad(), TensorEqual(f64({0, 0}, {1, 2})));
  Var z = x * w.reshape({1, 2}) - w.reshape({1, 2});
  CHECK_THAT(z.value(), TensorEqual(f64({0, -12}, {1, 2})));
}

TEST_CASE("an all-Tensor call is still a Tensor op after the conversion exists", "[autodiff]") {
  const Tensor a = f64({1, 2, 3, 4}, {2, 2});
  // The static type is Tensor (checked above for every op at compile time); the value is the
  // Tensor op's, and nothing is recorded anywhere because no Var exists.
  Tensor r = matmul(a, a) + sum(a, 0) * 2.0;
  CHECK_THAT(r, TensorEqual(f64({15, 22, 23, 34}, {2, 2})));
}

TEST_CASE("a module's forward and operator() take a Tensor", "[autodiff]") {
  Generator gen(3);
  nn::Linear fc(2, 1, gen, {.dtype = DType::F64});
  fc.weight().set_value(f64({0.5, -0.25}, {1, 2}));
  fc.bias().set_value(f64({0.25}, {1}));
  const Tensor x = f64({1, 2}, {1, 2});
  Var y = fc.forward(x);
  CHECK_THAT(y.value(), TensorEqual(f64({0.25}, {1, 1})));
  nn::Sequential seq(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(2, 3, gen, nn::LinearOptions{.dtype = DType::F64}),
      std::make_shared<nn::ReLU>()});
  Var s = seq(x);
  CHECK(s.shape() == Shape{1, 3});
  // Gradients reach the parameters, and the Tensor input is no leaf of the tape.
  mse_loss(y, f64({1}, {1, 1})).backward();
  CHECK_THAT(fc.weight().grad(), TensorEqual(f64({-1.5, -3.0}, {1, 2})));
}

TEST_CASE("losses take a Tensor target (or prediction) beside a Var", "[autodiff]") {
  Var pred(f64({1, 2, 3}, {3}), true);
  const Tensor target = f64({1, 1, 1}, {3});
  Var loss = nn::mse_loss(pred, target);
  CHECK_THAT(loss.value(), TensorNear(Tensor::scalar(5.0 / 3.0, DType::F64), 1e-15, 0));
  loss.backward();
  CHECK_THAT(pred.grad(), TensorNear(f64({0, 2.0 / 3, 4.0 / 3}, {3}), 1e-15, 0));
  // The target as the Var side, the prediction a Tensor: the loss is a constant.
  Var constant = mse_loss(target, Var(pred.value()));
  CHECK_FALSE(constant.requires_grad());
  // Logits as a plain Tensor (evaluation): a constant loss, no tape.
  Var ce = nn::cross_entropy(f64({0, 0}, {1, 2}), Tensor::from_vector<std::int64_t>({1}));
  CHECK_FALSE(ce.requires_grad());
  CHECK(ce.value().item<double>() == Approx(std::log(2.0)).epsilon(1e-15));
}

TEST_CASE("a list of Vars takes Tensors (cat stack) and where takes a Tensor branch",
          "[autodiff]") {
  Var x(f64({1, 2}, {2}), true);
  const Tensor c = f64({7, 8}, {2});
  Var joined = cat({x, c});
  CHECK_THAT(joined.value(), TensorEqual(f64({1, 2, 7, 8}, {4})));
  Var picked = where(Tensor::from_vector<bool>({true, false}), x, c);
  CHECK_THAT(picked.value(), TensorEqual(f64({1, 8}, {2})));
  (sum(joined * 2.0) + sum(picked)).backward();
  CHECK_THAT(x.grad(), TensorEqual(f64({3, 2}, {2})));
}

TEST_CASE("a Tensor made a Var is a constant leaf and an undefined one is refused", "[autodiff]") {
  const Tensor t = f64({1, 2}, {2});
  Var v = t;
  CHECK(v.is_leaf());
  CHECK_FALSE(v.requires_grad());
  CHECK(v.value().storage() == t.storage());  // no copy of the data
  CHECK_THROWS_WITH(Var(Tensor()),
                    Catch::Contains("Var: expected a defined tensor, got an undefined one"));
  // Nothing to differentiate: backward from a result of constants only is refused as before.
  Var r = sum(v * t);
  CHECK_FALSE(r.requires_grad());
  CHECK_THROWS_AS(r.backward(), AutodiffError);
}
