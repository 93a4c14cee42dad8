// Convolution, pooling and padding against PyTorch 1.13 (tools/golden/conv_golden.py, data in
// tests/data/conv_golden.txt): the result and every gradient of sum(out * gout), F32 and F64.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>

#include "autodiff/autodiff.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_tensors.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::GoldenCase;
using ruccl::testing::TensorNear;

namespace {

const std::map<std::string, GoldenCase>& conv_golden() {
  static const auto cases = ruccl::testing::load_golden("conv_golden.txt");
  return cases;
}

using ConvFn = std::function<Var(const Var& x, const Var& w, const Var& b)>;
using PoolFn = std::function<Var(const Var& x)>;

// The calls of tools/golden/conv_golden.py, case by case.
const std::map<std::string, ConvFn>& conv_cases() {
  static const std::map<std::string, ConvFn> cases = {
      {"conv2d_basic",
       [](const Var& x, const Var& w, const Var& b) { return conv2d(x, w, b, {.padding = 1}); }},
      {"conv2d_stride_pad_nonsquare",
       [](const Var& x, const Var& w, const Var& b) {
         return conv2d(x, w, b, {.stride = 2, .padding = {1, 2}});
       }},
      {"conv2d_dilation",
       [](const Var& x, const Var& w, const Var& b) {
         return conv2d(x, w, b, {.padding = 2, .dilation = {2, 1}});
       }},
      {"conv2d_groups",
       [](const Var& x, const Var& w, const Var& b) {
         return conv2d(x, w, b, {.stride = {1, 2}, .padding = 1, .groups = 2});
       }},
      {"conv2d_depthwise",
       [](const Var& x, const Var& w, const Var& b) {
         return conv2d(x, w, b, {.stride = 2, .padding = 2, .dilation = 2, .groups = 4});
       }},
      {"conv2d_1x1", [](const Var& x, const Var& w, const Var& b) { return conv2d(x, w, b); }},
      {"conv1d_basic",
       [](const Var& x, const Var& w, const Var& b) {
         return conv1d(x, w, b, {.stride = 2, .padding = 1, .dilation = 2});
       }},
      {"conv1d_groups", [](const Var& x, const Var& w,
                           const Var& b) { return conv1d(x, w, b, {.padding = 3, .groups = 3}); }},
  };
  return cases;
}

const std::map<std::string, PoolFn>& pool_cases() {
  static const std::map<std::string, PoolFn> cases = {
      {"max_pool2d_k2", [](const Var& x) { return max_pool2d(x, {.kernel = 2}); }},
      {"max_pool2d_k3_s2_p1",
       [](const Var& x) { return max_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1}); }},
      {"max_pool2d_dilation",
       [](const Var& x) {
         return max_pool2d(
             x, {.kernel = {2, 3}, .stride = Size2d{1, 2}, .padding = 1, .dilation = {2, 1}});
       }},
      {"max_pool2d_ties",
       [](const Var& x) { return max_pool2d(x, {.kernel = 3, .stride = 1, .padding = 1}); }},
      {"avg_pool2d_pad_include",
       [](const Var& x) { return avg_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1}); }},
      {"avg_pool2d_pad_exclude",
       [](const Var& x) {
         return avg_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false});
       }},
      {"avg_pool2d_nonsquare",
       [](const Var& x) {
         return avg_pool2d(x, {.kernel = {2, 3}, .stride = 1});
       }},
      {"adaptive_avg_pool2d_3x2",
       [](const Var& x) {
         return adaptive_avg_pool2d(x, {3, 2});
       }},
      {"adaptive_avg_pool2d_1", [](const Var& x) { return adaptive_avg_pool2d(x, 1); }},
      {"adaptive_avg_pool2d_4x3",
       [](const Var& x) {
         return adaptive_avg_pool2d(x, {4, 3});
       }},
      {"pad_constant",
       [](const Var& x) {
         return pad(x, {1, 2, 0, 1}, PadMode::Constant, 0.5);
       }},
      {"pad_reflect",
       [](const Var& x) {
         return pad(x, {2, 1, 1, 3}, PadMode::Reflect);
       }},
      {"pad_replicate",
       [](const Var& x) {
         return pad(x, {1, 2, 2, 0}, PadMode::Replicate);
       }},
  };
  return cases;
}

// F32 results differ from PyTorch's by summation order only; F64 to the last few bits.
void check_near(const Tensor& actual, const Tensor& expected) {
  if (expected.dtype() == DType::F32) {
    CHECK_THAT(actual, TensorNear(expected, 1e-4, 1e-5));
  } else {
    CHECK_THAT(actual, TensorNear(expected, 1e-10, 1e-12));
  }
}

const GoldenCase& golden(const std::string& name) {
  const auto it = conv_golden().find(name);
  REQUIRE(it != conv_golden().end());
  return it->second;
}

}  // namespace

TEST_CASE("conv1d and conv2d match PyTorch: values and gradients, F32 and F64", "[autodiff]") {
  for (const auto& [name, fn] : conv_cases()) {
    for (const char* suffix : {"_f32", "_f64"}) {
      INFO(name << suffix);
      const GoldenCase& g = golden(name + suffix);
      Var x(g.at("x"), true);
      Var w(g.at("w"), true);
      const bool has_bias = g.count("b") != 0;
      Var b = has_bias ? Var(g.at("b"), true) : Var();
      Var y = fn(x, w, b);
      check_near(y.value(), g.at("out"));
      y.backward(g.at("gout"));
      check_near(x.grad(), g.at("grad_x"));
      check_near(w.grad(), g.at("grad_w"));
      if (has_bias) check_near(b.grad(), g.at("grad_b"));
      if (name == "conv2d_basic") {  // the tensor-level op: the same values without a tape
        check_near(ruccl::conv2d(x.value(), w.value(), b.value(), {.padding = 1}), g.at("out"));
      }
    }
  }
}

TEST_CASE("pooling and pad match PyTorch: values and gradients, F32 and F64", "[autodiff]") {
  for (const auto& [name, fn] : pool_cases()) {
    for (const char* suffix : {"_f32", "_f64"}) {
      INFO(name << suffix);
      const GoldenCase& g = golden(name + suffix);
      Var x(g.at("x"), true);
      Var y = fn(x);
      check_near(y.value(), g.at("out"));
      y.backward(g.at("gout"));
      check_near(x.grad(), g.at("grad_x"));
    }
  }
}

TEST_CASE("max_pool2d's gradient goes to the first maximum of a window on ties", "[autodiff]") {
  // Every value equal: each window's first element (row-major, padding skipped) gets it.
  Var x(Tensor::ones({1, 1, 2, 3}, DType::F64), true);
  Var y = max_pool2d(x, {.kernel = 2, .stride = 1});  // windows at columns 0 and 1
  y.backward(Tensor::from_vector<double>({1.0, 10.0}, {1, 1, 1, 2}));
  CHECK_THAT(x.grad(), ruccl::testing::TensorEqual(
                           Tensor::from_vector<double>({1, 10, 0, 0, 0, 0}, {1, 1, 2, 3})));
}
