// Elementwise ops, reductions and softmax against PyTorch 1.13 on random inputs: the cases live in
// tests/data/tensor_ops_golden.txt, written by tools/golden/tensor_ops.py (format in its header).
//
// Tolerances (|ours - torch| <= atol + rtol * |torch|), by result dtype:
//   F64  rtol 1e-10, atol 1e-12: libm and PyTorch's vectorised math differ by a few ulp at most.
//   F32  rtol 1e-5,  atol 1e-6:  a few ulp, plus our double accumulation against torch's float.
//   F16  rtol 2e-3,  atol 1e-3:  one F16 ulp is 2^-10 of the value (both round once from F32).
//   BF16 rtol 1.6e-2, atol 1e-2: one BF16 ulp is 2^-7 of the value.
//   integers and Bool: exact.
// Every case runs twice: on contiguous inputs and on strided copies (every other element).
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/support/test_data_dir.h"

using namespace ruccl;
using ruccl::testing::TensorNear;

namespace {

struct GoldenCase {
  int line = 0;
  std::string op;
  std::map<std::string, std::string> params;
  std::vector<Tensor> inputs;
  Tensor expected;
};

DType parse_dtype(const std::string& name) {
  static const std::map<std::string, DType> kDtypes = {
      {"F16", DType::F16}, {"BF16", DType::BF16}, {"F32", DType::F32},  {"F64", DType::F64},
      {"I32", DType::I32}, {"I64", DType::I64},   {"Bool", DType::Bool}};
  const auto it = kDtypes.find(name);
  if (it == kDtypes.end()) throw std::runtime_error("unknown dtype " + name);
  return it->second;
}

// "in F32 2 3 4 : v0 v1 ..." -> a tensor.
Tensor parse_tensor(std::istringstream& in) {
  std::string dtype_name;
  std::int64_t ndim = 0;
  in >> dtype_name >> ndim;
  const DType dtype = parse_dtype(dtype_name);
  Shape shape;
  for (std::int64_t i = 0; i < ndim; ++i) {
    std::int64_t d = 0;
    in >> d;
    shape.push_back(d);
  }
  std::string colon;
  in >> colon;
  if (colon != ":") throw std::runtime_error("expected ':' after the shape");
  if (is_floating(dtype)) {
    std::vector<double> values;
    for (double v; in >> v;) values.push_back(v);
    return Tensor::from_vector<double>(values, shape).to(dtype);
  }
  std::vector<std::int64_t> values;
  for (std::int64_t v; in >> v;) values.push_back(v);
  return Tensor::from_vector<std::int64_t>(values, shape).to(dtype);
}

std::vector<GoldenCase> load_cases() {
  const std::string path = ruccl::testing::test_data_path("tensor_ops_golden.txt");
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path);
  std::vector<GoldenCase> cases;
  GoldenCase current;
  std::string text;
  for (int line = 1; std::getline(file, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream in(text);
    std::string kind;
    in >> kind;
    if (kind == "case") {
      current = GoldenCase{};
      current.line = line;
      in >> current.op;
      for (std::string kv; in >> kv;) {
        const auto eq = kv.find('=');
        current.params[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    } else if (kind == "in") {
      current.inputs.push_back(parse_tensor(in));
    } else if (kind == "out") {
      current.expected = parse_tensor(in);
    } else if (kind == "end") {
      cases.push_back(current);
    } else {
      throw std::runtime_error("bad line " + std::to_string(line) + " in " + path);
    }
  }
  return cases;
}

std::vector<std::int64_t> parse_dims(const std::string& text) {
  std::vector<std::int64_t> dims;
  if (text == "all") return dims;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) dims.push_back(std::stoll(part));
  return dims;
}

// The same values in a strided layout (every other element of a buffer twice as long).
Tensor strided_copy(const Tensor& t) {
  Shape shape = t.shape();
  shape.push_back(2);
  Tensor view = Tensor::zeros(shape, t.dtype()).select(-1, 0);
  view.copy_(t);
  return view;
}

using OpFn = std::function<Tensor(const GoldenCase&, const std::vector<Tensor>&)>;

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

std::pair<double, double> tolerance(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return {1e-10, 1e-12};
    case DType::F32:
      return {1e-5, 1e-6};
    case DType::F16:
      return {2e-3, 1e-3};
    case DType::BF16:
      return {1.6e-2, 1e-2};
    default:
      return {0.0, 0.0};
  }
}

}  // namespace

TEST_CASE("elementwise ops, reductions and softmax match PyTorch on the golden cases", "[tensor]") {
  const std::vector<GoldenCase> cases = load_cases();
  REQUIRE(cases.size() > 1000);
  std::map<std::string, int> checked;
  for (const GoldenCase& c : cases) {
    INFO("golden case at line " << c.line << ": " << c.op);
    const auto it = ops().find(c.op);
    REQUIRE(it != ops().end());
    const auto [rtol, atol] = tolerance(c.expected.dtype());
    std::vector<Tensor> strided;
    for (const Tensor& t : c.inputs) strided.push_back(strided_copy(t));
    const std::vector<Tensor>* variants[] = {&c.inputs, &strided};
    for (const std::vector<Tensor>* inputs : variants) {
      INFO((inputs == &strided ? "strided inputs" : "contiguous inputs"));
      Tensor actual;
      REQUIRE_NOTHROW(actual = it->second(c, *inputs));
      CHECK_THAT(actual, TensorNear(c.expected, rtol, atol));
    }
    ++checked[c.op];
  }
  CHECK(checked.size() == ops().size());  // every op has golden cases
}
