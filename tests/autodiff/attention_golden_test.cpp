// scaled_dot_product_attention and nn::MultiheadAttention against PyTorch 1.13, in F64 and F32
// (tools/golden/attention_loss_golden.py, data in tests/data/attention_loss_golden.txt). Values
// and the gradients of sum(out * gout). Tolerances: F64 absorbs summation order only; F32 also
// the rounding of a softmax over 6 keys and three chained matmuls (a few ulps of 1e-7 each).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/golden_tensors.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorNear;

namespace {

Tensor G(const std::string& name) {
  return ruccl::testing::golden_tensor("attention_loss_golden.txt", name);
}
bool has(const std::string& name) {
  return ruccl::testing::golden_tensors("attention_loss_golden.txt").count(name) > 0;
}

Var leaf(const std::string& name) { return Var(G(name), true); }

struct Tol {
  double rtol;
  double atol;
};
Tol tolerance(const std::string& suffix) {
  return suffix == "f64" ? Tol{1e-9, 1e-12} : Tol{1e-4, 2e-5};
}

const char* kSuffixes[] = {"f64", "f32"};

// The golden Bool mask (written as 0/1).
Tensor bool_mask(const std::string& name) { return ruccl::ne(G(name), 0); }

void check_sdpa(const std::string& name, bool causal) {
  for (const char* suffix : kSuffixes) {
    const std::string c = name + "_" + suffix;
    INFO(c);
    const Tol tol = tolerance(suffix);
    Var q = leaf(c + ".q"), k = leaf(c + ".k"), v = leaf(c + ".v");
    Tensor mask;
    if (has(c + ".mask")) {
      mask = G(c + ".mask");
      if (mask.dtype() == DType::I64) mask = bool_mask(c + ".mask");
    }
    Var out = scaled_dot_product_attention(q, k, v, mask, causal);
    REQUIRE(out.dtype() == q.dtype());
    sum(mul(out, Var(G(c + ".gout")))).backward();
    CHECK_THAT(out.value(), TensorNear(G(c + ".out"), tol.rtol, tol.atol));
    CHECK_THAT(q.grad(), TensorNear(G(c + ".grad_q"), tol.rtol, tol.atol));
    CHECK_THAT(k.grad(), TensorNear(G(c + ".grad_k"), tol.rtol, tol.atol));
    CHECK_THAT(v.grad(), TensorNear(G(c + ".grad_v"), tol.rtol, tol.atol));
  }
}

// A MultiheadAttention holding the golden parameters.
nn::MultiheadAttention golden_mha(const std::string& c, bool batch_first, DType dtype) {
  nn::MultiheadAttention m(8, 2, {.batch_first = batch_first, .dtype = dtype});
  for (const char* p : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}) {
    m.param(p).set_value(G(c + "." + p));
  }
  return m;
}

void check_mha_params(nn::MultiheadAttention& m, const std::string& c, const Tol& tol) {
  for (const char* p : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}) {
    INFO(p);
    CHECK_THAT(m.param(p).grad(), TensorNear(G(c + ".grad_" + p), tol.rtol, tol.atol));
  }
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches PyTorch without a mask", "[autodiff]") {
  check_sdpa("sdpa_plain", false);
}

TEST_CASE("scaled_dot_product_attention matches PyTorch with an additive mask", "[autodiff]") {
  check_sdpa("sdpa_float_mask", false);
}

TEST_CASE("scaled_dot_product_attention matches PyTorch with a broadcast Bool mask", "[autodiff]") {
  check_sdpa("sdpa_bool_mask", false);
}

TEST_CASE("scaled_dot_product_attention matches PyTorch when causal, T = S and T < S",
          "[autodiff]") {
  check_sdpa("sdpa_causal", true);
  check_sdpa("sdpa_causal_short", true);
}

TEST_CASE("MultiheadAttention matches torch.nn.MultiheadAttention with an additive mask",
          "[autodiff]") {
  for (const char* suffix : kSuffixes) {
    const std::string c = std::string("mha_cross_") + suffix;
    INFO(c);
    const Tol tol = tolerance(suffix);
    Var query = leaf(c + ".query"), key = leaf(c + ".key"), value = leaf(c + ".value");
    nn::MultiheadAttention m = golden_mha(c, false, query.dtype());
    Var out = m.forward(query, key, value, G(c + ".mask"));
    sum(mul(out, Var(G(c + ".gout")))).backward();
    CHECK_THAT(out.value(), TensorNear(G(c + ".out"), tol.rtol, tol.atol));
    CHECK_THAT(query.grad(), TensorNear(G(c + ".grad_query"), tol.rtol, tol.atol));
    CHECK_THAT(key.grad(), TensorNear(G(c + ".grad_key"), tol.rtol, tol.atol));
    CHECK_THAT(value.grad(), TensorNear(G(c + ".grad_value"), tol.rtol, tol.atol));
    check_mha_params(m, c, tol);
  }
}

TEST_CASE(
    "MultiheadAttention's causal self-attention (batch_first) matches PyTorch's with a "
    "Bool mask, given as the mask or as is_causal",
    "[autodiff]") {
  for (const char* suffix : kSuffixes) {
    const std::string c = std::string("mha_causal_") + suffix;
    INFO(c);
    const Tol tol = tolerance(suffix);
    for (bool as_flag : {false, true}) {
      INFO("is_causal " << as_flag);
      Var x = leaf(c + ".x");
      nn::MultiheadAttention m = golden_mha(c, true, x.dtype());
      Var out = as_flag ? m.forward(x, x, x, {}, true) : m.forward(x, x, x, bool_mask(c + ".mask"));
      sum(mul(out, Var(G(c + ".gout")))).backward();
      CHECK_THAT(out.value(), TensorNear(G(c + ".out"), tol.rtol, tol.atol));
      CHECK_THAT(x.grad(), TensorNear(G(c + ".grad_x"), tol.rtol, tol.atol));
      check_mha_params(m, c, tol);
    }
  }
}

TEST_CASE(
    "MultiheadAttention::attend matches PyTorch with a key_padding_mask and the attention "
    "weights, averaged and per head, with an additive or causal mask",
    "[autodiff]") {
  for (const char* name : {"mha_padded", "mha_padded_causal"}) {
    const bool causal = std::string(name) == "mha_padded_causal";
    for (const char* suffix : kSuffixes) {
      const std::string c = std::string(name) + "_" + suffix;
      INFO(c);
      const Tol tol = tolerance(suffix);
      // The causal case twice: as its Bool mask, and as is_causal.
      for (bool as_flag : causal ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
        INFO("is_causal " << as_flag);
        Var query = leaf(c + ".query"), key = leaf(c + ".key"), value = leaf(c + ".value");
        nn::MultiheadAttention m = golden_mha(c, causal, query.dtype());
        nn::MultiheadAttentionArgs args{.key_padding_mask = bool_mask(c + ".kpm"),
                                        .need_weights = true,
                                        .average_attn_weights = !causal};
        if (as_flag) {
          args.is_causal = true;
        } else {
          args.attn_mask = causal ? bool_mask(c + ".mask") : G(c + ".mask");
        }
        auto [out, weights] = m.attend(query, key, value, args);
        add(sum(mul(out, Var(G(c + ".gout")))), sum(mul(weights, Var(G(c + ".gw"))))).backward();
        CHECK_THAT(out.value(), TensorNear(G(c + ".out"), tol.rtol, tol.atol));
        CHECK_THAT(weights.value(), TensorNear(G(c + ".weights"), tol.rtol, tol.atol));
        CHECK_THAT(query.grad(), TensorNear(G(c + ".grad_query"), tol.rtol, tol.atol));
        CHECK_THAT(key.grad(), TensorNear(G(c + ".grad_key"), tol.rtol, tol.atol));
        CHECK_THAT(value.grad(), TensorNear(G(c + ".grad_value"), tol.rtol, tol.atol));
        check_mha_params(m, c, tol);
        // Without the weights, SDPA's fused path gives the same output.
        args.need_weights = false;
        CHECK_THAT(m.attend(query, key, value, args).output.value(),
                   TensorNear(G(c + ".out"), tol.rtol, tol.atol));
      }
    }
  }
}
