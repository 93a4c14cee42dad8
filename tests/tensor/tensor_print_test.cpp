// Tensor::to_string / operator<<: the values as PyTorch prints them, against str(t) of PyTorch
// 1.13 (tools/golden/tensor_print_golden.py -> tests/data/tensor_print.txt).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "tests/support/test_data_dir.h"

using namespace ruccl;

namespace {

struct PrintCase {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<double> values;
  std::string text;  // str(t), lines joined with '\n'
};

DType dtype_named(const std::string& name) {
  for (const DType d :
       {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    std::ostringstream spelled;
    spelled << d;
    if (spelled.str() == name) return d;
  }
  throw std::runtime_error("unknown dtype " + name);
}

std::vector<PrintCase> print_cases() {
  const std::string path = ruccl::testing::test_data_path("tensor_print.txt");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<PrintCase> cases;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "case") {
      PrintCase c;
      std::string dtype;
      words >> c.name >> dtype;
      c.dtype = dtype_named(dtype);
      for (std::int64_t d; words >> d;) c.shape.push_back(d);
      cases.push_back(std::move(c));
    } else if (key == "values") {
      for (std::string v; words >> v;) cases.back().values.push_back(std::stod(v));
    } else if (line.rfind("|", 0) == 0) {  // "| " then a line of the text ("| " alone: blank)
      std::string& text = cases.back().text;
      if (!text.empty()) text += '\n';
      if (line.size() > 2) text.append(line, 2, std::string::npos);
    }
  }
  return cases;
}

}  // namespace

TEST_CASE("to_string prints the values as PyTorch does", "[tensor]") {
  const std::vector<PrintCase> cases = print_cases();
  REQUIRE(cases.size() == 18);
  for (const PrintCase& c : cases) {
    INFO(c.name);
    const Tensor t = Tensor::from_vector<double>(c.values, c.shape).to(c.dtype);
    CHECK(t.to_string() == c.text);
  }
}

TEST_CASE("operator<< prints to_string, views print their own values", "[tensor]") {
  const Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::ostringstream out;
  out << t.transpose(0, 1);
  CHECK(out.str() == "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])");
  CHECK(t.narrow(1, 1, 1).to_string() == "tensor([[2.],\n        [5.]])");
  CHECK(Tensor().to_string() == "Tensor(undefined)");
}
