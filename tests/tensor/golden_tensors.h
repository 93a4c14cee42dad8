#pragma once
// Reads tests/data/tensor_linalg_index.txt (written by tools/golden/tensor_linalg_index.py):
// one tensor per line, `CASE NAME DTYPE NDIM D0 .. V0 V1 ...`, grouped by CASE.
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/core/tensor.h"
#include "tests/support/test_data_dir.h"

namespace ruccl::testing {

/// The tensors of one golden case by argument name ("a", "b", "index", ..., and "out").
using GoldenCase = std::map<std::string, Tensor>;

/// Every case of a golden file, by case name. Throws std::runtime_error on a malformed file.
inline std::map<std::string, GoldenCase> load_golden(const std::string& file) {
  const std::string path = test_data_path(file);
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden data " + path);
  std::map<std::string, GoldenCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string case_name, name, dtype;
    int ndim = 0;
    fields >> case_name >> name >> dtype >> ndim;
    std::vector<std::int64_t> dims(static_cast<std::size_t>(ndim));
    for (auto& d : dims) fields >> d;
    const Shape shape(dims);
    Tensor t;
    if (dtype == "I64") {
      std::vector<std::int64_t> values(static_cast<std::size_t>(shape.numel()));
      for (auto& v : values) fields >> v;
      t = Tensor::from_vector(values, shape);
    } else {
      std::vector<double> values(static_cast<std::size_t>(shape.numel()));
      for (auto& v : values) fields >> v;
      t = Tensor::from_vector(values, shape).to(dtype == "F32" ? DType::F32 : DType::F64);
    }
    if (fields.fail()) throw std::runtime_error("malformed golden line in " + path + ": " + line);
    cases[case_name][name] = t;
  }
  return cases;
}

/// The cases of tensor_linalg_index.txt, read once.
inline const std::map<std::string, GoldenCase>& linalg_index_golden() {
  static const auto cases = load_golden("tensor_linalg_index.txt");
  return cases;
}

/// One case of tensor_linalg_index.txt; throws std::out_of_range when it is missing.
inline const GoldenCase& golden_case(const std::string& name) {
  return linalg_index_golden().at(name);
}

}  // namespace ruccl::testing
