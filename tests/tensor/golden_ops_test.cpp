// Elementwise ops, reductions and softmax against PyTorch 1.13 on random inputs: the cases live in
// tests/data/tensor_ops_golden.txt, written by tools/golden/tensor_ops.py (format in its header).
// Tolerances by result dtype: tests/tensor/golden_op_cases.h.
// Every case runs twice: on contiguous inputs and on strided copies (every other element).
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_op_cases.h"

using namespace ruccl;

namespace {

using GoldenCase = ruccl::testing::OpCase;
using ruccl::testing::parse_dims;

using ruccl::testing::OpFn;

const std::map<std::string, OpFn>& ops() {
  using In = const std::vector<Tensor>&;
  using C = const GoldenCase&;
  auto dims = [](C c) { return parse_dims(c.params.at("dims")); };
  auto dim = [](C c) { return std::stoll(c.params.at("dims")); };
  auto keepdim = [](C c) { return c.params.count("keepdim") && c.params.at("keepdim") == "1"; };
  auto all = [](C c) { return c.params.at("dims") == "all"; };
  static const std::map<std::string, OpFn> kOps = {
      {"add", [](C, In x) { return x[0] + x[1]; }},
      {"sub", [](C, In x) { return x[0] - x[1]; }},
      {"mul", [](C, In x) { return x[0] * x[1]; }},
      {"div", [](C, In x) { return x[0] / x[1]; }},
      {"pow", [](C, In x) { return pow(x[0], x[1]); }},
      {"maximum", [](C, In x) { return maximum(x[0], x[1]); }},
      {"minimum", [](C, In x) { return minimum(x[0], x[1]); }},
      {"eq", [](C, In x) { return eq(x[0], x[1]); }},
      {"ne", [](C, In x) { return ne(x[0], x[1]); }},
      {"lt", [](C, In x) { return lt(x[0], x[1]); }},
      {"le", [](C, In x) { return le(x[0], x[1]); }},
      {"gt", [](C, In x) { return gt(x[0], x[1]); }},
      {"ge", [](C, In x) { return ge(x[0], x[1]); }},
      {"logical_and", [](C, In x) { return logical_and(x[0], x[1]); }},
      {"logical_or", [](C, In x) { return logical_or(x[0], x[1]); }},
      {"logical_not", [](C, In x) { return logical_not(x[0]); }},
      {"where", [](C, In x) { return where(x[0], x[1], x[2]); }},
      {"neg", [](C, In x) { return -x[0]; }},
      {"abs", [](C, In x) { return abs(x[0]); }},
      {"sign", [](C, In x) { return sign(x[0]); }},
      {"relu", [](C, In x) { return relu(x[0]); }},
      {"exp", [](C, In x) { return exp(x[0]); }},
      {"log", [](C, In x) { return log(x[0]); }},
      {"sqrt", [](C, In x) { return sqrt(x[0]); }},
      {"tanh", [](C, In x) { return tanh(x[0]); }},
      {"sigmoid", [](C, In x) { return sigmoid(x[0]); }},
      {"gelu", [](C, In x) { return gelu(x[0]); }},
      {"sum", [=](C c, In x) { return sum(x[0], dims(c), keepdim(c)); }},
      {"mean", [=](C c, In x) { return mean(x[0], dims(c), keepdim(c)); }},
      {"var",
       [=](C c, In x) {
         return var(x[0], dims(c), std::stoll(c.params.at("correction")), keepdim(c));
       }},
      {"prod", [=](C c, In x) { return prod(x[0], dim(c), keepdim(c)); }},
      {"max", [=](C c, In x) { return all(c) ? max(x[0]) : max(x[0], dim(c), keepdim(c)); }},
      {"min", [=](C c, In x) { return all(c) ? min(x[0]) : min(x[0], dim(c), keepdim(c)); }},
      {"argmax", [=](C c, In x) { return argmax(x[0], dim(c), keepdim(c)); }},
      {"argmin", [=](C c, In x) { return argmin(x[0], dim(c), keepdim(c)); }},
      {"softmax", [=](C c, In x) { return softmax(x[0], dim(c)); }},
      {"log_softmax", [=](C c, In x) { return log_softmax(x[0], dim(c)); }},
  };
  return kOps;
}

}  // namespace

TEST_CASE("elementwise ops, reductions and softmax match PyTorch on the golden cases", "[tensor]") {
  ruccl::testing::check_golden_file("tensor_ops_golden.txt", ops(), 1000);
}
