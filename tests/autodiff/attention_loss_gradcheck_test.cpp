// Float64 finite-difference checks (public gradcheck) of scaled_dot_product_attention,
// MultiheadAttention and the losses with each of their options, and their errors.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"

using namespace ruccl;
using namespace ruccl::autodiff;

namespace {

using Fn = std::function<Var(const std::vector<Var>&)>;

Var leaf(const Shape& shape, Generator& gen) {
  return Var(Tensor::randn(shape, gen, DType::F64), true);
}

void check(const Fn& fn, const std::vector<Var>& inputs) {
  GradcheckReport r = gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

Tensor i64(std::vector<std::int64_t> v, const Shape& s) {
  return Tensor::from_vector<std::int64_t>(v, s);
}

// The message of the exception `fn` throws as E (fails the test if it throws nothing).
template <typename E, typename F>
std::string message_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return {};
}

}  // namespace

TEST_CASE("scaled_dot_product_attention passes gradcheck with each mask kind", "[autodiff]") {
  Generator gen(7);
  Var q = leaf({2, 2, 3, 4}, gen), k = leaf({2, 2, 5, 4}, gen), v = leaf({2, 2, 5, 3}, gen);
  auto sdpa = [](Tensor mask, bool causal) -> Fn {
    return [mask, causal](const std::vector<Var>& x) {
      return scaled_dot_product_attention(x[0], x[1], x[2], mask, causal);
    };
  };
  check(sdpa({}, false), {q, k, v});
  check(sdpa(Tensor::randn({3, 5}, gen, DType::F64), false), {q, k, v});
  // A Bool mask broadcast over the heads; each query keeps key 0.
  Tensor keep = ruccl::gt(Tensor::rand({2, 1, 3, 5}, gen, DType::F64), 0.5);
  keep = ruccl::logical_or(keep, ruccl::eq(Tensor::arange(0, 5).reshape({1, 1, 1, 5}), 0));
  check(sdpa(keep, false), {q, k, v});
  check(sdpa({}, true), {q, k, v});
  // Non-contiguous q (a transposed view) and only some inputs requiring grad.
  Var qt(Tensor::randn({2, 2, 4, 3}, gen, DType::F64).transpose(-2, -1), true);
  check(sdpa({}, true), {qt, Var(k.value()), v});
}

TEST_CASE(
    "scaled_dot_product_attention with dropout passes gradcheck for a fixed mask and draws "
    "the mask from the generator",
    "[autodiff]") {
  Generator gen(8);
  Var q = leaf({1, 2, 3, 4}, gen), k = leaf({1, 2, 4, 4}, gen), v = leaf({1, 2, 4, 2}, gen);
  check(
      [](const std::vector<Var>& x) {
        Generator g(123);  // the same dropout mask on every evaluation
        return scaled_dot_product_attention(x[0], x[1], x[2], {}, false, 0.4, &g);
      },
      {q, k, v});
  Generator a(5), b(5), c(6);
  Tensor ya = scaled_dot_product_attention(q, k, v, {}, false, 0.5, &a).value();
  Tensor yb = scaled_dot_product_attention(q, k, v, {}, false, 0.5, &b).value();
  Tensor yc = scaled_dot_product_attention(q, k, v, {}, false, 0.5, &c).value();
  CHECK(ruccl::equal(ya, yb));
  CHECK_FALSE(ruccl::equal(ya, yc));
  CHECK_FALSE(ruccl::equal(ya, scaled_dot_product_attention(q, k, v).value()));
}

TEST_CASE("MultiheadAttention passes gradcheck for inputs and parameters", "[autodiff]") {
  Generator gen(9);
  nn::MultiheadAttention m(6, 3, gen, {.batch_first = true, .dtype = DType::F64});
  Var x = leaf({2, 4, 6}, gen), kv = leaf({2, 3, 6}, gen);
  std::vector<Var> inputs{x, kv};
  for (const nn::Param& p : m.parameters()) inputs.push_back(p.var());
  REQUIRE(inputs.size() == 6);
  check([&](const std::vector<Var>& in) { return m.forward(in[0], in[1], in[1]); }, inputs);
  check([&](const std::vector<Var>& in) { return m.forward(in[0], in[0], in[0], {}, true); },
        inputs);
  // key_padding_mask with is_causal, and the weights (per head and averaged) on the tape.
  Tensor kpm = ruccl::ne(Tensor::from_vector<double>({0, 0, 0, 0, 1, 1}, {2, 3}), 0);
  for (bool average : {true, false}) {
    INFO("average " << average);
    check(
        [&](const std::vector<Var>& in) {
          auto [y, w] = m.attend(
              in[0], in[1], in[1],
              {.key_padding_mask = kpm, .need_weights = true, .average_attn_weights = average});
          return add(sum(mul(y, y)), sum(mul(w, w)));
        },
        inputs);
  }
  check(
      [&](const std::vector<Var>& in) {
        return m.attend(in[0], in[1], in[1], {.key_padding_mask = kpm, .is_causal = true}).output;
      },
      inputs);
  CHECK(m.named_parameters().at(0).first == "in_proj_weight");
  CHECK(m.param("in_proj_weight").shape() == Shape{18, 6});
  CHECK(m.param("out_proj.weight").shape() == Shape{6, 6});
}

TEST_CASE("cross_entropy and nll_loss pass gradcheck with weight, ignore_index and smoothing",
          "[autodiff]") {
  Generator gen(10);
  Var x = leaf({5, 4}, gen), x3 = leaf({2, 4, 3}, gen);
  Tensor t = i64({1, -100, 3, 0, 2}, {5});
  Tensor t3 = i64({0, 3, -100, 2, 1, 1}, {2, 3});
  Tensor w = Tensor::from_vector<double>({0.5, 1.5, 2.0, 0.25});
  for (Reduction r : {Reduction::Mean, Reduction::Sum}) {
    for (double eps : {0.0, 0.2}) {
      for (bool weighted : {false, true}) {
        ClassLossOptions o{
            .reduction = r, .label_smoothing = eps, .weight = weighted ? w : Tensor()};
        INFO("eps " << eps << " weighted " << weighted);
        check([&](const std::vector<Var>& v) { return cross_entropy(v[0], t, o); }, {x});
        check([&](const std::vector<Var>& v) { return cross_entropy(v[0], t3, o); }, {x3});
        o.label_smoothing = 0.0;
        check([&](const std::vector<Var>& v) { return nll_loss(v[0], t, o); }, {x});
        check([&](const std::vector<Var>& v) { return nll_loss(v[0], t3, o); }, {x3});
      }
    }
  }
  ClassLossOptions ignore_zero{.ignore_index = 0};
  check(
      [&](const std::vector<Var>& v) {
        return cross_entropy(v[0], i64({1, 0, 3, 0, 2}, {5}), ignore_zero);
      },
      {x});
}

TEST_CASE("binary_cross_entropy_with_logits passes gradcheck with weight and pos_weight",
          "[autodiff]") {
  Generator gen(11);
  Var x = leaf({3, 4}, gen);
  Tensor y = Tensor::rand({3, 4}, gen, DType::F64);
  Tensor w = Tensor::rand({4}, gen, DType::F64);
  Tensor pw = ruccl::add(Tensor::rand({4}, gen, DType::F64), 0.5);
  for (Reduction r : {Reduction::Mean, Reduction::Sum}) {
    check(
        [&](const std::vector<Var>& v) {
          return binary_cross_entropy_with_logits(v[0], y, {.reduction = r});
        },
        {x});
    check(
        [&](const std::vector<Var>& v) {
          return binary_cross_entropy_with_logits(v[0], y, {r, w, pw});
        },
        {x});
  }
}

TEST_CASE("attention errors name the op with expected and got", "[autodiff]") {
  Generator gen(12);
  Var q = leaf({1, 2, 3, 4}, gen), k = leaf({1, 2, 5, 4}, gen), v = leaf({1, 2, 5, 2}, gen);
  CHECK_THAT(message_of<ShapeError>([&] {
               scaled_dot_product_attention(q, leaf({1, 2, 5, 3}, gen), v);
             }),
             Catch::Contains("scaled_dot_product_attention: expected k's last dim to be q's head "
                             "dim 4, got k [1, 2, 5, 3]"));
  CHECK_THAT(message_of<ShapeError>([&] {
               scaled_dot_product_attention(q, k, leaf({1, 2, 4, 2}, gen));
             }),
             Catch::Contains("expected v with k's sequence length 5"));
  CHECK_THAT(message_of<ShapeError>([&] {
               scaled_dot_product_attention(q, k, leaf({2, 2, 5, 2}, gen));
             }),
             Catch::Contains("leading dims"));
  CHECK_THAT(
      message_of<ShapeError>([&] {
        scaled_dot_product_attention(q, k, v, Tensor::zeros({4, 5}, DType::F64));
      }),
      Catch::Contains(
          "expected an attn_mask broadcastable to the scores' shape [1, 2, 3, 5], got [4, 5]"));
  CHECK_THAT(message_of<DTypeError>([&] {
               scaled_dot_product_attention(q, k, v, Tensor::zeros({3, 5}, DType::F32));
             }),
             Catch::Contains("expected a Bool attn_mask or one of q's dtype F64, got F32"));
  CHECK_THAT(message_of<DTypeError>([&] { scaled_dot_product_attention(q, k, to(v, DType::F32)); }),
             Catch::Contains("expected k and v of q's dtype F64"));
  CHECK_THROWS_AS(scaled_dot_product_attention(q, k, v, {}, false, 1.0), ValueError);
  CHECK_THROWS_AS(scaled_dot_product_attention(q, k, v, Tensor::zeros({3, 5}, DType::F64), true),
                  ValueError);
  CHECK_THAT(message_of<ValueError>([] { nn::MultiheadAttention(10, 4); }),
             Catch::Contains("expected embed_dim divisible by num_heads, got embed_dim 10 and "
                             "num_heads 4"));
  nn::MultiheadAttention m(8, 2, gen, {.dtype = DType::F64});
  CHECK_THAT(message_of<ShapeError>([&] {
               m.forward(leaf({3, 2, 6}, gen));
             }),
             Catch::Contains("MultiheadAttention: expected query, key and value of shape [T, B, E] "
                             "with E = 8, got [3, 2, 6]"));
  CHECK_THAT(message_of<ShapeError>([&] {
               Var x = leaf({3, 2, 8}, gen);
               m.forward(x, x, x, Tensor::zeros({3, 4}, DType::F64));
             }),
             Catch::Contains("expected an attn_mask of shape [3, 3] or [4, 3, 3], got [3, 4]"));
  Var x = leaf({3, 2, 8}, gen);
  CHECK_THAT(message_of<ShapeError>([&] {
               m.attend(x, x, x, {.key_padding_mask = Tensor::zeros({3, 2}, DType::Bool)});
             }),
             Catch::Contains("expected a key_padding_mask of shape [2, 3], got [3, 2]"));
  CHECK_THAT(message_of<DTypeError>([&] {
               m.attend(x, x, x, {.key_padding_mask = Tensor::zeros({2, 3}, DType::I64)});
             }),
             Catch::Contains("expected a Bool or floating key_padding_mask, got I64"));
  CHECK_THAT(message_of<ValueError>([&] {
               m.attend(x, x, x,
                        {.attn_mask = Tensor::zeros({3, 3}, DType::Bool),
                         .key_padding_mask = Tensor::zeros({2, 3}, DType::Bool),
                         .is_causal = true});
             }),
             Catch::Contains("expected attn_mask or is_causal, not both"));
}

TEST_CASE("loss errors name the op with expected and got", "[autodiff]") {
  Generator gen(13);
  Var x = leaf({3, 4}, gen);
  CHECK_THAT(message_of<IndexError>([&] {
               cross_entropy(x, i64({0, 4, 1}, {3}));
             }),
             Catch::Contains("cross_entropy: expected targets in [0, 4) or equal to ignore_index "
                             "-100, got 4"));
  CHECK_THAT(message_of<IndexError>([&] {
               nll_loss(x, i64({0, -1, 1}, {3}));
             }),
             Catch::Contains("nll_loss: expected targets in [0, 4) or equal to ignore_index -100, "
                             "got -1"));
  CHECK_THAT(message_of<DTypeError>([&] { cross_entropy(x, Tensor::zeros({3}, DType::F64)); }),
             Catch::Contains("expected integer (I64/I32) class indices as targets, got F64"));
  CHECK_THAT(
      message_of<ShapeError>([&] {
        cross_entropy(x, i64({0, 1}, {2}));
      }),
      Catch::Contains("expected targets of shape [3] for an input of shape [3, 4], got [2]"));
  CHECK_THAT(message_of<ShapeError>([&] {
               cross_entropy(x, i64({0, 1, 2}, {3}), {.weight = Tensor::ones({3}, DType::F64)});
             }),
             Catch::Contains("expected a weight of shape [4], got [3]"));
  CHECK_THAT(message_of<DTypeError>([&] {
               cross_entropy(x, i64({0, 1, 2}, {3}), {.weight = Tensor::ones({4}, DType::F32)});
             }),
             Catch::Contains("expected a weight of the input's dtype F64, got F32"));
  CHECK_THROWS_AS(cross_entropy(x, i64({0, 1, 2}, {3}), {.label_smoothing = 1.5}), ValueError);
  CHECK_THROWS_AS(nll_loss(x, i64({0, 1, 2}, {3}), {.label_smoothing = 0.1}), ValueError);
  // I32 targets are accepted as PyTorch's int64 ones would be.
  CHECK(cross_entropy(x, i64({0, 1, 2}, {3}).to(DType::I32)).value().item<double>() ==
        cross_entropy(x, i64({0, 1, 2}, {3})).value().item<double>());
  Tensor y = Tensor::zeros({3, 4}, DType::F64);
  CHECK_THAT(message_of<ShapeError>([&] {
               binary_cross_entropy_with_logits(x, Tensor::zeros({4, 3}, DType::F64));
             }),
             Catch::Contains("binary_cross_entropy_with_logits: expected a target of the input's "
                             "shape [3, 4], got [4, 3]"));
  CHECK_THAT(message_of<DTypeError>([&] {
               binary_cross_entropy_with_logits(x, Tensor::zeros({3, 4}, DType::I64));
             }),
             Catch::Contains("expected a target of the input's dtype F64, got I64"));
  CHECK_THAT(
      message_of<ShapeError>([&] {
        binary_cross_entropy_with_logits(x, y, {.pos_weight = Tensor::ones({3}, DType::F64)});
      }),
      Catch::Contains("expected a pos_weight broadcastable to the input's shape [3, 4], got [3]"));
}
