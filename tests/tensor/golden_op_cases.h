#pragma once
// The reader of the op golden files written by tools/golden/tensor_ops.py's format (case / in /
// out / end records; see that script's header), shared by the golden tests of tensor ops, with
// the strided-layout copy they rerun each case on and the tolerances by result dtype:
//   F64  rtol 1e-10, atol 1e-12: libm and PyTorch's vectorised math differ by a few ulp at most.
//   F32  rtol 1e-5,  atol 1e-6:  a few ulp, plus our double accumulation against torch's float.
//   F16  rtol 2e-3,  atol 1e-3:  one F16 ulp is 2^-10 of the value (both round once from F32).
//   BF16 rtol 1.6e-2, atol 1e-2: one BF16 ulp is 2^-7 of the value.
//   integers and Bool: exact.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"
#include "tests/support/test_data_dir.h"

namespace ruccl::testing {

/// One op call: its parameters (key=value), inputs and PyTorch's result.
struct OpCase {
  int line = 0;
  std::string op;
  std::map<std::string, std::string> params;
  std::vector<Tensor> inputs;
  Tensor expected;
};

inline DType parse_dtype(const std::string& name) {
  static const std::map<std::string, DType> kDtypes = {
      {"F16", DType::F16}, {"BF16", DType::BF16}, {"F32", DType::F32},  {"F64", DType::F64},
      {"I32", DType::I32}, {"I64", DType::I64},   {"Bool", DType::Bool}};
  const auto it = kDtypes.find(name);
  if (it == kDtypes.end()) throw std::runtime_error("unknown dtype " + name);
  return it->second;
}

// "in F32 2 3 4 : v0 v1 ..." -> a tensor.
inline Tensor parse_tensor(std::istringstream& in) {
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

/// Every case of the file `name` under tests/data, in file order.
inline std::vector<OpCase> load_cases(const std::string& name) {
  const std::string path = test_data_path(name);
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path);
  std::vector<OpCase> cases;
  OpCase current;
  std::string text;
  for (int line = 1; std::getline(file, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    std::istringstream in(text);
    std::string kind;
    in >> kind;
    if (kind == "case") {
      current = OpCase{};
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

inline std::vector<std::int64_t> parse_dims(const std::string& text) {
  std::vector<std::int64_t> dims;
  if (text == "all") return dims;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, ',');) dims.push_back(std::stoll(part));
  return dims;
}

// The same values in a strided layout (every other element of a buffer twice as long).
inline Tensor strided_copy(const Tensor& t) {
  Shape shape = t.shape();
  shape.push_back(2);
  Tensor view = Tensor::zeros(shape, t.dtype()).select(-1, 0);
  view.copy_(t);
  return view;
}

/// (rtol, atol) for a result of `dtype` (the file comment says why).
inline std::pair<double, double> tolerance(DType dtype) {
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

/// An op under test: its result for a case's parameters and inputs.
using OpFn = std::function<Tensor(const OpCase&, const std::vector<Tensor>&)>;

/// Runs every case of the golden file `name` (at least `min_cases` of them) through its op in
/// `ops`, on the contiguous inputs and on strided copies, and checks PyTorch's result within the
/// tolerance of its dtype; every op of `ops` must have cases.
inline void check_golden_file(const std::string& name, const std::map<std::string, OpFn>& ops,
                              std::size_t min_cases) {
  const std::vector<OpCase> cases = load_cases(name);
  REQUIRE(cases.size() > min_cases);
  std::map<std::string, int> checked;
  for (const OpCase& c : cases) {
    INFO("golden case at line " << c.line << ": " << c.op);
    const auto it = ops.find(c.op);
    REQUIRE(it != ops.end());
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
  CHECK(checked.size() == ops.size());  // every op has golden cases
}

}  // namespace ruccl::testing
