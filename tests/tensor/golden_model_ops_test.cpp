// issue 30's element-wise math, cumsum, sort/topk and masking ops against PyTorch 1.13 on random
// inputs: the cases live in tests/data/model_ops_golden.txt, written by
// tools/golden/model_ops.py. Tolerances by result dtype as in golden_op_cases.h; every case runs
// on contiguous inputs and on strided copies.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/tensor/golden_op_cases.h"

using namespace ruccl;
using ruccl::testing::OpCase;

namespace {

using ruccl::testing::OpFn;

double real(const OpCase& c, const char* key) { return std::stod(c.params.at(key)); }
std::int64_t integer(const OpCase& c, const char* key) { return std::stoll(c.params.at(key)); }
bool flag(const OpCase& c, const char* key) { return c.params.at(key) == "1"; }
// A bound of clamp: integral in the file for integer inputs ("-1"), else a double.
std::optional<Scalar> bound(const OpCase& c, const char* key) {
  if (!c.params.count(key)) return std::nullopt;
  const std::string& text = c.params.at(key);
  if (text.find('.') == std::string::npos) return Scalar(std::stoll(text));
  return Scalar(std::stod(text));
}

const std::map<std::string, OpFn>& ops() {
  using In = const std::vector<Tensor>&;
  using C = const OpCase&;
  static const std::map<std::string, OpFn> kOps = {
      {"sin", [](C, In x) { return sin(x[0]); }},
      {"cos", [](C, In x) { return cos(x[0]); }},
      {"silu", [](C, In x) { return silu(x[0]); }},
      {"rsqrt", [](C, In x) { return rsqrt(x[0]); }},
      {"erf", [](C, In x) { return erf(x[0]); }},
      {"log1p", [](C, In x) { return log1p(x[0]); }},
      {"expm1", [](C, In x) { return expm1(x[0]); }},
      {"leaky_relu", [](C c, In x) { return leaky_relu(x[0], real(c, "slope")); }},
      {"elu", [](C c, In x) { return elu(x[0], real(c, "alpha")); }},
      {"softplus", [](C c, In x) { return softplus(x[0], real(c, "beta"), real(c, "threshold")); }},
      {"clamp", [](C c, In x) { return clamp(x[0], bound(c, "min"), bound(c, "max")); }},
      {"cumsum", [](C c, In x) { return cumsum(x[0], integer(c, "dim")); }},
      {"sort_values",
       [](C c, In x) { return sort(x[0], integer(c, "dim"), flag(c, "descending")).values; }},
      {"sort_indices",
       [](C c, In x) { return sort(x[0], integer(c, "dim"), flag(c, "descending")).indices; }},
      {"topk_values",
       [](C c, In x) {
         return topk(x[0], integer(c, "k"), integer(c, "dim"), flag(c, "largest")).values;
       }},
      {"topk_indices",
       [](C c, In x) {
         return topk(x[0], integer(c, "k"), integer(c, "dim"), flag(c, "largest")).indices;
       }},
      {"masked_fill", [](C c, In x) { return masked_fill(x[0], x[1], real(c, "value")); }},
      {"tril", [](C c, In x) { return tril(x[0], integer(c, "diagonal")); }},
      {"triu", [](C c, In x) { return triu(x[0], integer(c, "diagonal")); }},
  };
  return kOps;
}

}  // namespace

TEST_CASE("element-wise math, cumsum, sort, topk and masking match PyTorch on the golden cases",
          "[tensor]") {
  ruccl::testing::check_golden_file("model_ops_golden.txt", ops(), 1000);
}
