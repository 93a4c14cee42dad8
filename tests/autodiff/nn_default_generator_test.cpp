// The default generator (ruccl::manual_seed): layers built without a Generator, reproducible by
// seed to the exact bit, safe to draw from on several threads.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/support/test_data_dir.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::nn::Param;
using ruccl::testing::TensorEqual;

namespace {

/// The weight [2, 4] and bias [2] of Linear(4, 2) after manual_seed(seed), from
/// tools/golden/nn_init_golden.py (an independent Philox; hex floats, exact).
std::pair<Tensor, Tensor> golden_linear(std::uint64_t seed) {
  std::ifstream in(ruccl::testing::test_data_path("nn_init_golden.txt"));
  REQUIRE(in.good());
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::uint64_t s = 0;
    fields >> s;
    if (s != seed) continue;
    std::vector<float> v;
    std::string word;
    while (fields >> word) v.push_back(static_cast<float>(std::strtod(word.c_str(), nullptr)));
    REQUIRE(v.size() == 10);
    return {Tensor::from_vector<float>({v.begin(), v.begin() + 8}, {2, 4}),
            Tensor::from_vector<float>({v.begin() + 8, v.end()}, {2})};
  }
  FAIL("no golden line for seed " << seed);
  return {};
}

}  // namespace

TEST_CASE("manual_seed fixes the initial weights of layers built without a Generator",
          "[autodiff]") {
  manual_seed(42);
  nn::Linear a(4, 2);
  const auto [weight, bias] = golden_linear(42);
  CHECK_THAT(a.weight().value(), TensorEqual(weight));
  CHECK_THAT(a.bias().value(), TensorEqual(bias));

  // The next layer continues the stream; reseeding starts it again.
  nn::Linear b(4, 2);
  CHECK_FALSE(ruccl::equal(b.weight().value(), a.weight().value()));
  manual_seed(42);
  nn::Linear again(4, 2);
  CHECK_THAT(again.weight().value(), TensorEqual(weight));
  CHECK_THAT(again.bias().value(), TensorEqual(bias));

  // The default generator after manual_seed(s) is Generator(s): an explicit one gives the same.
  Generator gen(42);
  nn::Linear explicit_gen(4, 2, gen);
  CHECK_THAT(explicit_gen.weight().value(), TensorEqual(weight));
  manual_seed(7);
  nn::Embedding emb(5, 3, {.dtype = DType::F64});
  Generator seven(7);
  CHECK_THAT(emb.weight().value(), TensorEqual(Tensor::randn({5, 3}, seven, DType::F64)));
}

TEST_CASE("the stream of the default seed (libtorch's) gives pinned initial weights",
          "[autodiff]") {
  // What a process that never calls manual_seed draws (checked through a fresh copy of that
  // state, since other tests reseed the process-wide one).
  Generator fresh(kDefaultGeneratorSeed);
  nn::Linear a(4, 2, fresh);
  const auto [weight, bias] = golden_linear(kDefaultGeneratorSeed);
  CHECK_THAT(a.weight().value(), TensorEqual(weight));
  CHECK_THAT(a.bias().value(), TensorEqual(bias));
  CHECK(kDefaultGeneratorSeed == 67280421310721ull);
}

TEST_CASE("initialisers without a Generator draw from the default one", "[autodiff]") {
  Param w(Tensor::zeros({3, 4}, DType::F64));
  Param expected(Tensor::zeros({3, 4}, DType::F64));
  manual_seed(11);
  nn::init::kaiming_uniform_(w);
  nn::init::normal_(w, 0.0, 2.0);
  Generator gen(11);
  nn::init::kaiming_uniform_(expected, gen);
  nn::init::normal_(expected, 0.0, 2.0, gen);
  CHECK_THAT(w.value(), TensorEqual(expected.value()));
  manual_seed(12);
  nn::init::xavier_normal_(w, 0.5);
  Generator twelve(12);
  nn::init::xavier_normal_(expected, twelve, 0.5);
  CHECK_THAT(w.value(), TensorEqual(expected.value()));
}

TEST_CASE("Dropout without a seed takes one from the default generator when built", "[autodiff]") {
  manual_seed(5);
  nn::Dropout first(0.5);
  nn::Dropout second(0.5);
  Generator five(5);
  const std::uint64_t seed0 = five.next_u64();
  CHECK(first.generator().seed() == seed0);
  CHECK(second.generator().seed() == five.next_u64());
  CHECK(nn::Dropout(0.5, 9).generator().seed() == 9);  // an explicit seed draws nothing
  manual_seed(5);
  nn::Dropout rebuilt(0.5);
  CHECK(rebuilt.generator().seed() == seed0);
  Var x(Tensor::ones({64}, DType::F64));
  CHECK_THAT(rebuilt.forward(x).value(), TensorEqual(first.forward(x).value()));
}

TEST_CASE("layers built on several threads at once each take one unbroken run of the stream",
          "[autodiff]") {
  // The default generator is locked for a layer's whole draw: four threads building at once
  // get, in some order, the four layers built one after another from the same seed.
  constexpr int kThreads = 4;
  manual_seed(3);
  std::vector<Tensor> sequential;
  for (int i = 0; i < kThreads; ++i) {
    nn::Linear fc(8, 8);
    sequential.push_back(fc.weight().value());
  }
  manual_seed(3);
  std::vector<Tensor> parallel(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&parallel, t] { parallel[t] = nn::Linear(8, 8).weight().value(); });
  }
  for (auto& th : threads) th.join();
  for (const Tensor& w : parallel) {
    int matches = 0;
    for (const Tensor& s : sequential) matches += ruccl::equal(w, s) ? 1 : 0;
    CHECK(matches == 1);
  }
}
