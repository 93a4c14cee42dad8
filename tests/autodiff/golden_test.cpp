// Forward values and gradients against PyTorch 1.13 (tools/golden/autodiff_golden.py, data in
// tests/data/autodiff_golden.txt). Everything is float64; the tolerance (rtol 1e-9, atol 1e-12)
// only absorbs summation-order differences between our kernels and PyTorch's.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/golden_tensors.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorNear;

namespace {

constexpr double kRtol = 1e-9;
constexpr double kAtol = 1e-12;

Tensor G(const std::string& name) {
  return ruccl::testing::golden_tensor("autodiff_golden.txt", name);
}

Var leaf(const std::string& name) { return Var(G(name), true); }

void check_mlp(const std::string& c, Reduction reduction) {
  Var x = leaf(c + ".x"), w1 = leaf(c + ".w1"), b1 = leaf(c + ".b1"), w2 = leaf(c + ".w2"),
      b2 = leaf(c + ".b2");
  Var logits = linear(relu(linear(x, w1, b1)), w2, b2);
  Var loss = cross_entropy(logits, G(c + ".t"), reduction);
  loss.backward();
  CHECK_THAT(logits.value(), TensorNear(G(c + ".logits"), kRtol, kAtol));
  CHECK_THAT(loss.value(), TensorNear(G(c + ".loss"), kRtol, kAtol));
  CHECK_THAT(x.grad(), TensorNear(G(c + ".grad_x"), kRtol, kAtol));
  CHECK_THAT(w1.grad(), TensorNear(G(c + ".grad_w1"), kRtol, kAtol));
  CHECK_THAT(b1.grad(), TensorNear(G(c + ".grad_b1"), kRtol, kAtol));
  CHECK_THAT(w2.grad(), TensorNear(G(c + ".grad_w2"), kRtol, kAtol));
  CHECK_THAT(b2.grad(), TensorNear(G(c + ".grad_b2"), kRtol, kAtol));
}

// Runs a composite with inputs in0..in{n-1} and compares out and every gradN.
void check_composite(const std::string& c, int n,
                     const std::function<Var(const std::vector<Var>&)>& fn) {
  std::vector<Var> in;
  for (int i = 0; i < n; ++i) in.push_back(leaf(c + ".in" + std::to_string(i)));
  Var out = fn(in);
  out.backward();
  CHECK_THAT(out.value(), TensorNear(G(c + ".out"), kRtol, kAtol));
  for (int i = 0; i < n; ++i) {
    INFO(c << " gradient of input " << i);
    CHECK_THAT(in[static_cast<std::size_t>(i)].grad(),
               TensorNear(G(c + ".grad" + std::to_string(i)), kRtol, kAtol));
  }
}

Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }

}  // namespace

TEST_CASE("a two-layer MLP with cross-entropy matches PyTorch's loss and gradients", "[autodiff]") {
  SECTION("mean reduction") { check_mlp("mlp_mean", Reduction::Mean); }
  SECTION("sum reduction") { check_mlp("mlp_sum", Reduction::Sum); }
}

TEST_CASE("an Embedding + LayerNorm model matches PyTorch, repeated indices included",
          "[autodiff]") {
  Generator gen(0);
  nn::Embedding emb(10, 4, gen, {.dtype = DType::F64});
  nn::LayerNorm ln(4, {.dtype = DType::F64});
  emb.weight().set_value(G("embed_ln.emb"));
  ln.weight().set_value(G("embed_ln.lnw"));
  ln.bias().set_value(G("embed_ln.lnb"));
  Var y = ln.forward(emb.forward(G("embed_ln.idx")));
  Var loss = sum(mul(y, Var(G("embed_ln.c"))));
  loss.backward();
  CHECK_THAT(y.value(), TensorNear(G("embed_ln.y"), kRtol, kAtol));
  CHECK_THAT(loss.value(), TensorNear(G("embed_ln.loss"), kRtol, kAtol));
  CHECK_THAT(emb.weight().grad(), TensorNear(G("embed_ln.grad_emb"), kRtol, kAtol));
  CHECK_THAT(ln.weight().grad(), TensorNear(G("embed_ln.grad_lnw"), kRtol, kAtol));
  CHECK_THAT(ln.bias().grad(), TensorNear(G("embed_ln.grad_lnb"), kRtol, kAtol));
}

TEST_CASE("the Embedding + LayerNorm model in F32 matches PyTorch's values to F32 precision",
          "[autodiff]") {
  // The same case on F32 parameters (LayerNorm runs the fused layer_norm): PyTorch's F64 values
  // within F32 rounding (a few ulp of values of order 1).
  const auto f32 = [](const Tensor& t) { return t.to(DType::F32); };
  Generator gen(0);
  nn::Embedding emb(10, 4, gen);
  nn::LayerNorm ln(4);
  emb.weight().set_value(f32(G("embed_ln.emb")));
  ln.weight().set_value(f32(G("embed_ln.lnw")));
  ln.bias().set_value(f32(G("embed_ln.lnb")));
  Var y = ln.forward(emb.forward(G("embed_ln.idx")));
  sum(mul(y, Var(f32(G("embed_ln.c"))))).backward();
  CHECK_THAT(y.value().to(DType::F64), TensorNear(G("embed_ln.y"), 1e-5, 1e-5));
  CHECK_THAT(emb.weight().grad().to(DType::F64), TensorNear(G("embed_ln.grad_emb"), 1e-5, 1e-5));
  CHECK_THAT(ln.weight().grad().to(DType::F64), TensorNear(G("embed_ln.grad_lnw"), 1e-5, 1e-5));
  CHECK_THAT(ln.bias().grad().to(DType::F64), TensorNear(G("embed_ln.grad_lnb"), 1e-5, 1e-5));
}

TEST_CASE("composite functions match PyTorch's values and gradients", "[autodiff]") {
  check_composite("softmax", 2, [](const std::vector<Var>& v) {
    return add(sum(mul(softmax(v[0], 1), v[1])), mean(mul(log_softmax(v[0], 0), v[1])));
  });
  check_composite("elementwise", 2, [](const std::vector<Var>& v) {
    const Var &x = v[0], &y = v[1];
    Var a = mul(gelu(x), sigmoid(y));
    Var b = div(tanh(mul(x, y)), add(exp(x), 1.0) /* 1 + e^x */);
    Var c = mul(sqrt(add(abs(x), 1.0)), pow(y, 3));
    return sum(sub(add(a, b), c));
  });
  check_composite("matmul", 2, [](const std::vector<Var>& v) {
    return mean(pow(transpose(matmul(v[0], v[1]), 1, 2), 2));
  });
  check_composite("reduce", 2, [](const std::vector<Var>& v) {
    return add(add(sum(var(v[0], {1})), sum(max(v[0], 0))), sum(div(log(v[1]), v[1])));
  });
  check_composite("shape", 2, [](const std::vector<Var>& v) {
    const Var &x = v[0], &y = v[1];
    Var a = sum(mul(narrow(permute(cat({x, y}, 1), {1, 0}), 0, 1, 3), Var(f64({1, 2, 3, 4}))));
    Tensor gidx = Tensor::from_vector<std::int64_t>({1, 0, 0, 0, 1, 1, 0, 1}, {4, 2});
    Var b = sum(pow(gather(x, 1, gidx), 2));
    Var c = sum(pow(index_select(y, 0, Tensor::from_vector<std::int64_t>({2, 0, 2})), 3));
    Var d = sum(mul(expand(narrow(x, 1, 0, 1), {4, 6}), Var(f64({0.5, 0.6, 0.7, 0.8, 0.9, 1.0}))));
    return add(add(a, b), add(c, d));
  });
  check_composite("mse", 2, [](const std::vector<Var>& v) {
    return add(mse_loss(v[0], v[1]), mse_loss(mul(v[0], 2.0), v[1], Reduction::Sum));
  });
}
