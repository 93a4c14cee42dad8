#pragma once
// Reads the golden-tensor files the tools/golden/*.py scripts write: one tensor per line,
// "<case>.<name> <dtype> <ndim> <sizes...> <values...>" (dtype f64, f32 or i64), '#' comments.
// Catch2 REQUIREs fail the calling test on a missing or malformed file.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tests/support/test_data_dir.h"

namespace ruccl::testing {

/// Every tensor of tests/data/<file>, by "<case>.<name>".
inline std::map<std::string, Tensor> load_golden_tensors(const std::string& file) {
  std::ifstream in(test_data_path(file));
  REQUIRE(in.good());
  std::map<std::string, Tensor> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, dtype;
    std::int64_t ndim = 0;
    ls >> name >> dtype >> ndim;
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(ndim));
    for (auto& s : sizes) ls >> s;
    const Shape shape(sizes);
    if (dtype == "i64") {
      std::vector<std::int64_t> v(static_cast<std::size_t>(shape.numel()));
      for (auto& x : v) ls >> x;
      out[name] = Tensor::from_vector<std::int64_t>(v, shape);
    } else {
      REQUIRE((dtype == "f64" || dtype == "f32"));
      std::vector<double> v(static_cast<std::size_t>(shape.numel()));
      for (auto& x : v) ls >> x;
      Tensor t = Tensor::from_vector<double>(v, shape);
      out[name] = dtype == "f32" ? t.to(DType::F32) : t;
    }
    REQUIRE(!ls.fail());
  }
  return out;
}

/// The tensors of tests/data/<file>, read once per test binary.
inline const std::map<std::string, Tensor>& golden_tensors(const std::string& file) {
  static std::map<std::string, std::map<std::string, Tensor>> cache;
  auto it = cache.find(file);
  if (it == cache.end()) it = cache.emplace(file, load_golden_tensors(file)).first;
  return it->second;
}

/// The tensor "<case>.<name>" of tests/data/<file>; the calling test fails when there is none.
inline Tensor golden_tensor(const std::string& file, const std::string& name) {
  const auto& all = golden_tensors(file);
  auto it = all.find(name);
  INFO("golden tensor " << name << " of " << file);
  REQUIRE(it != all.end());
  return it->second;
}

}  // namespace ruccl::testing
