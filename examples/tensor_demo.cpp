// A short tensor demo: builds a tensor, takes strided views without copying, materialises them,
// converts dtypes, and checks every value in closed form. Exit 0 when all hold (a CTest test,
// label example).
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "tensor/tensor.h"

namespace {

/// Prints one line per check; returns whether it held.
bool report(const char* what, bool ok) {
  std::printf("  %-58s %s\n", what, ok ? "ok" : "WRONG");
  return ok;
}

}  // namespace

int main() {
  using ruccl::DType;
  using ruccl::Tensor;
  try {
    // x[i][j] = 10 i + j on a 3 x 4 grid.
    std::vector<float> values;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) values.push_back(10.0f * i + j);
    }
    const Tensor x = Tensor::from_vector<float>(values, {3, 4});
    std::printf("ruCCL tensor demo\n  x = %s\n", x.to_string().c_str());
    bool ok = true;

    const Tensor xt = x.transpose(0, 1);  // a view: shares x's storage, strides swapped
    ok &= report("transpose is a view (same storage, not contiguous)",
                 xt.storage() == x.storage() && !xt.is_contiguous());
    const std::vector<float> t = xt.contiguous().to_vector<float>();
    bool t_ok = xt.shape() == ruccl::Shape{4, 3};
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 3; ++i) t_ok &= t[j * 3 + i] == 10.0f * i + j;
    }
    ok &= report("transpose(0, 1).contiguous()[j][i] == 10 i + j", t_ok);

    const Tensor col = x.narrow(1, 2, 1);  // column 2: 2, 12, 22
    ok &= report("narrow(1, 2, 1) == [2, 12, 22]",
                 col.contiguous().to_vector<float>() == std::vector<float>{2, 12, 22});

    const Tensor row = Tensor::from_vector<float>({1, 2, 3}).reshape({1, 3});
    const Tensor big = row.expand({2, 3});  // stride 0 over the new rows
    ok &= report("expand({2, 3}) repeats the row without copying",
                 big.strides()[0] == 0 &&
                     big.contiguous().to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});

    const Tensor as_int = x.to(DType::I64);
    const std::vector<std::int64_t> ints = as_int.to_vector<std::int64_t>();
    ok &= report("to(I64) keeps every value (x[2][3] == 23)", ints.size() == 12 && ints[11] == 23);

    std::printf("tensor demo: %s\n", ok ? "all checks hold" : "SOME CHECKS FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensor demo failed: %s\n", e.what());
    return 1;
  }
}
