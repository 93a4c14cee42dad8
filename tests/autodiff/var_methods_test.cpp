// Var's op methods record exactly what the free functions record: the same value, one node of the
// same name with the same inputs, and the same gradient; plus gradcheck of the new select op.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;

namespace {

using Op = std::function<Var(const Var&)>;

// Runs `method` and `free_fn` on fresh leaves holding `value` and requires the same value, the
// same recorded node (name and number of inputs) and the same gradient for a fixed random seed.
void same_recording(const char* what, const Tensor& value, const Op& method, const Op& free_fn) {
  INFO(what);
  Var a(value.clone(), true);
  Var b(value.clone(), true);
  Var ya = method(a);
  Var yb = free_fn(b);
  REQUIRE_THAT(ya.value(), TensorEqual(yb.value()));
  REQUIRE(ya.grad_fn() != nullptr);
  REQUIRE(yb.grad_fn() != nullptr);
  CHECK(std::string(ya.grad_fn()->name()) == yb.grad_fn()->name());
  CHECK(ya.grad_fn()->num_inputs() == yb.grad_fn()->num_inputs());
  Generator gen(99);
  const Tensor seed = Tensor::randn(ya.shape(), gen, ya.dtype());
  ya.backward(seed);
  yb.backward(seed);
  CHECK_THAT(a.grad(), TensorEqual(b.grad()));
}

Tensor positive(const Shape& shape, Generator& gen) {
  return ruccl::add(Tensor::rand(shape, gen, DType::F64), 0.5);
}

}  // namespace

TEST_CASE("Var reduction methods record the free reductions' nodes", "[autodiff]") {
  Generator gen(21);
  const Tensor x = Tensor::randn({2, 3, 4}, gen, DType::F64);
  same_recording(
      "sum()", x, [](const Var& v) { return v.sum(); }, [](const Var& v) { return sum(v); });
  same_recording(
      "sum(1)", x, [](const Var& v) { return v.sum(1); }, [](const Var& v) { return sum(v, 1); });
  same_recording(
      "sum(-1, true)", x, [](const Var& v) { return v.sum(-1, true); },
      [](const Var& v) { return sum(v, -1, true); });
  same_recording(
      "sum({0, 2})", x,
      [](const Var& v) {
        return v.sum({0, 2});
      },
      [](const Var& v) {
        return sum(v, {0, 2});
      });
  same_recording(
      "mean()", x, [](const Var& v) { return v.mean(); }, [](const Var& v) { return mean(v); });
  same_recording(
      "mean(2, true)", x, [](const Var& v) { return v.mean(2, true); },
      [](const Var& v) { return mean(v, 2, true); });
  same_recording(
      "mean({0, 1})", x,
      [](const Var& v) {
        return v.mean({0, 1});
      },
      [](const Var& v) {
        return mean(v, {0, 1});
      });
  same_recording(
      "prod()", x, [](const Var& v) { return v.prod(); }, [](const Var& v) { return prod(v); });
  same_recording(
      "prod(1)", x, [](const Var& v) { return v.prod(1); },
      [](const Var& v) { return prod(v, 1); });
  same_recording(
      "max()", x, [](const Var& v) { return v.max(); }, [](const Var& v) { return max(v); });
  same_recording(
      "max(1)", x, [](const Var& v) { return v.max(1); }, [](const Var& v) { return max(v, 1); });
  same_recording(
      "min()", x, [](const Var& v) { return v.min(); }, [](const Var& v) { return min(v); });
  same_recording(
      "min(0, true)", x, [](const Var& v) { return v.min(0, true); },
      [](const Var& v) { return min(v, 0, true); });
  same_recording(
      "softmax(1)", x, [](const Var& v) { return v.softmax(1); },
      [](const Var& v) { return softmax(v, 1); });
  same_recording(
      "log_softmax(-1)", x, [](const Var& v) { return v.log_softmax(-1); },
      [](const Var& v) { return log_softmax(v, -1); });
  // var is a composite: its last node is the same one.
  same_recording(
      "var(1)", x, [](const Var& v) { return v.var(1); }, [](const Var& v) { return var(v, {1}); });
  same_recording(
      "var({0, 2}, 0, true)", x,
      [](const Var& v) {
        return v.var({0, 2}, 0, true);
      },
      [](const Var& v) {
        return var(v, {0, 2}, 0, true);
      });
  Var leaf(x, true);
  CHECK_THAT(leaf.argmax(1), TensorEqual(argmax(leaf, 1)));
}

TEST_CASE("Var elementwise methods record the free functions' nodes", "[autodiff]") {
  Generator gen(22);
  const Tensor x = positive({3, 4}, gen);
  const Var other(positive({4}, gen), true);  // broadcasts; a second input of the node
  same_recording(
      "neg", x, [](const Var& v) { return v.neg(); }, [](const Var& v) { return neg(v); });
  same_recording(
      "exp", x, [](const Var& v) { return v.exp(); }, [](const Var& v) { return exp(v); });
  same_recording(
      "log", x, [](const Var& v) { return v.log(); }, [](const Var& v) { return log(v); });
  same_recording(
      "sqrt", x, [](const Var& v) { return v.sqrt(); }, [](const Var& v) { return sqrt(v); });
  same_recording(
      "abs", x, [](const Var& v) { return v.abs(); }, [](const Var& v) { return abs(v); });
  same_recording(
      "tanh", x, [](const Var& v) { return v.tanh(); }, [](const Var& v) { return tanh(v); });
  same_recording(
      "sigmoid", x, [](const Var& v) { return v.sigmoid(); },
      [](const Var& v) { return sigmoid(v); });
  same_recording(
      "relu", x, [](const Var& v) { return v.relu(); }, [](const Var& v) { return relu(v); });
  same_recording(
      "gelu", x, [](const Var& v) { return v.gelu(); }, [](const Var& v) { return gelu(v); });
  same_recording(
      "add(Var)", x, [&](const Var& v) { return v.add(other); },
      [&](const Var& v) { return add(v, other); });
  same_recording(
      "add(2)", x, [](const Var& v) { return v.add(2); }, [](const Var& v) { return add(v, 2); });
  same_recording(
      "sub(Var)", x, [&](const Var& v) { return v.sub(other); },
      [&](const Var& v) { return sub(v, other); });
  same_recording(
      "sub(0.5)", x, [](const Var& v) { return v.sub(0.5); },
      [](const Var& v) { return sub(v, 0.5); });
  same_recording(
      "mul(Var)", x, [&](const Var& v) { return v.mul(other); },
      [&](const Var& v) { return mul(v, other); });
  same_recording(
      "mul(3)", x, [](const Var& v) { return v.mul(3); }, [](const Var& v) { return mul(v, 3); });
  same_recording(
      "div(Var)", x, [&](const Var& v) { return v.div(other); },
      [&](const Var& v) { return div(v, other); });
  same_recording(
      "div(4)", x, [](const Var& v) { return v.div(4); }, [](const Var& v) { return div(v, 4); });
  same_recording(
      "pow(Var)", x, [&](const Var& v) { return v.pow(other); },
      [&](const Var& v) { return pow(v, other); });
  same_recording(
      "pow(2.5)", x, [](const Var& v) { return v.pow(2.5); },
      [](const Var& v) { return pow(v, 2.5); });
  same_recording(
      "maximum", x, [&](const Var& v) { return v.maximum(other); },
      [&](const Var& v) { return maximum(v, other); });
  same_recording(
      "minimum", x, [&](const Var& v) { return v.minimum(other); },
      [&](const Var& v) { return minimum(v, other); });
  same_recording(
      "to(F32)", x, [](const Var& v) { return v.to(DType::F32).to(DType::F64); },
      [](const Var& v) { return to(to(v, DType::F32), DType::F64); });
  // A Tensor argument is a constant: the method takes it through the implicit Var.
  Var leaf(x, true);
  Var scaled = leaf.mul(Tensor::full({4}, 2.0, DType::F64));
  scaled.sum().backward();
  CHECK_THAT(leaf.grad(), TensorEqual(Tensor::full({3, 4}, 2.0, DType::F64)));
}

TEST_CASE("Var shape matmul and index methods record the free functions' nodes", "[autodiff]") {
  Generator gen(23);
  const Tensor x = Tensor::randn({3, 4}, gen, DType::F64);
  const Var w(Tensor::randn({4, 2}, gen, DType::F64), true);
  same_recording(
      "matmul", x, [&](const Var& v) { return v.matmul(w); },
      [&](const Var& v) { return matmul(v, w); });
  same_recording(
      "t", x, [](const Var& v) { return v.t(); }, [](const Var& v) { return transpose(v, 0, 1); });
  same_recording(
      "reshape", x,
      [](const Var& v) {
        return v.reshape({2, -1});
      },
      [](const Var& v) {
        return reshape(v, {2, -1});
      });
  same_recording(
      "transpose", x, [](const Var& v) { return v.transpose(1, 0); },
      [](const Var& v) { return transpose(v, 1, 0); });
  same_recording(
      "permute", x,
      [](const Var& v) {
        return v.permute({1, 0});
      },
      [](const Var& v) {
        return permute(v, {1, 0});
      });
  same_recording(
      "narrow", x, [](const Var& v) { return v.narrow(1, 1, 2); },
      [](const Var& v) { return narrow(v, 1, 1, 2); });
  same_recording(
      "select", x, [](const Var& v) { return v.select(1, -1); },
      [](const Var& v) { return select(v, 1, -1); });
  same_recording(
      "expand", x,
      [](const Var& v) {
        return v.unsqueeze(0).expand({2, 3, 4});
      },
      [](const Var& v) {
        return expand(unsqueeze(v, 0), {2, 3, 4});
      });
  same_recording(
      "squeeze", x, [](const Var& v) { return v.unsqueeze(1).squeeze(1); },
      [](const Var& v) { return squeeze(unsqueeze(v, 1), 1); });
  same_recording(
      "flatten", x, [](const Var& v) { return v.flatten(); },
      [](const Var& v) { return flatten(v); });
  same_recording(
      "contiguous", x, [](const Var& v) { return v.t().contiguous(); },
      [](const Var& v) { return contiguous(transpose(v, 0, 1)); });
  const Tensor idx = Tensor::from_vector<std::int64_t>({2, 0, 2});
  same_recording(
      "index_select", x, [&](const Var& v) { return v.index_select(0, idx); },
      [&](const Var& v) { return index_select(v, 0, idx); });
  const Tensor g_idx = Tensor::from_vector<std::int64_t>({0, 3, 1, 1, 2, 0}, {3, 2});
  same_recording(
      "gather", x, [&](const Var& v) { return v.gather(1, g_idx); },
      [&](const Var& v) { return gather(v, 1, g_idx); });
  same_recording(
      "split", x, [](const Var& v) { return v.split(3, 1)[1]; },
      [](const Var& v) { return split(v, 3, 1)[1]; });
  same_recording(
      "split(sizes)", x,
      [](const Var& v) {
        return v.split({1, 2}, 0)[1];
      },
      [](const Var& v) {
        return split(v, {1, 2}, 0)[1];
      });
  same_recording(
      "chunk", x, [](const Var& v) { return v.chunk(2, 0)[0]; },
      [](const Var& v) { return chunk(v, 2, 0)[0]; });
  // t() of a 1-d Var is the Var itself; more than 2 dims is an error naming Var::t.
  Var row(Tensor::zeros({3}, DType::F64), true);
  CHECK(row.t().same(row));
  CHECK_THROWS_WITH(Var(Tensor::zeros({1, 2, 3})).t(),
                    Catch::Contains("Var::t: expected a Var with at most 2 dims, got [1, 2, 3]"));
}

TEST_CASE("select on Var passes gradcheck and puts the gradient in one slice", "[autodiff]") {
  Generator gen(24);
  Var x(Tensor::randn({3, 4, 2}, gen, DType::F64), true);
  for (std::int64_t d = -3; d < 3; ++d) {
    for (std::int64_t i : {0L, -1L}) {
      GradcheckReport r =
          gradcheck([d, i](const std::vector<Var>& in) { return select(in[0], d, i) * 3.0; }, {x});
      INFO("dim " << d << " index " << i << ": " << r.message);
      CHECK(r.ok);
    }
  }
  Var y = x.select(1, 2);
  REQUIRE(y.shape() == Shape{3, 2});
  y.sum().backward();
  Tensor expected = Tensor::zeros({3, 4, 2}, DType::F64);
  expected.narrow(1, 2, 1).fill_(1);
  CHECK_THAT(x.grad(), TensorEqual(expected));
  CHECK_THROWS_AS(x.select(1, 4), IndexError);
  CHECK_THROWS_AS(x.select(3, 0), IndexError);
}

TEST_CASE("method chains build the same graph as nested free calls", "[autodiff]") {
  Generator gen(25);
  const Tensor xv = Tensor::randn({4, 3}, gen, DType::F64);
  const Tensor wv = Tensor::randn({3, 5}, gen, DType::F64);
  Var x1(xv, true), w1(wv, true), x2(xv, true), w2(wv, true);
  Var chained = x1.matmul(w1).relu().sum(1).mean();
  Var nested = mean(sum(relu(matmul(x2, w2)), 1));
  CHECK_THAT(chained.value(), TensorEqual(nested.value()));
  chained.backward();
  nested.backward();
  CHECK_THAT(x1.grad(), TensorEqual(x2.grad()));
  CHECK_THAT(w1.grad(), TensorEqual(w2.grad()));
  // Under NoGradGuard a method records nothing, as the free function.
  NoGradGuard no_grad;
  CHECK(x1.exp().grad_fn() == nullptr);
}
