// The tensor snippets of docs/api.md, with the values they compute checked.
#include <cstdio>

#include "tensor/tensor.h"
using namespace ruccl;

int main() {
  // doc-begin
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor y = matmul(x, x.transpose(0, 1)) + 1.0;
  float s = sum(y).item<float>();
  // doc-end
  if (s != 6 + 12 + 12 + 26) return 1;  // x x^T = [[5, 11], [11, 25]], plus 1 each
  // doc-begin
  Generator gen(42);
  Tensor noise = Tensor::randn({4, 8}, gen);
  // doc-end
  Generator again(42);
  if (!equal(noise, Tensor::randn({4, 8}, again))) return 1;  // a pure function of the seed
  std::printf("OK: tensors\n");
}
