// autodiff/autodiff.h alone is enough to write a model: the Tensor operators (`Tensor - Tensor`)
// come with it. This file must include nothing else of ruCCL (it is the compile test).
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"

TEST_CASE("autodiff/autodiff.h alone declares Tensor's operators next to Var's", "[autodiff]") {
  const ruccl::Tensor a = ruccl::Tensor::full({2}, 3.0);
  const ruccl::Tensor b = ruccl::Tensor::ones({2});
  const ruccl::Tensor difference = a - b;
  CHECK(difference.to_vector<float>() == std::vector<float>{2.0f, 2.0f});
  CHECK((a * b + 1.0).to_vector<float>() == std::vector<float>{4.0f, 4.0f});
  const ruccl::autodiff::Var x(a, true);
  (x * x).sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{6.0f, 6.0f});
}
