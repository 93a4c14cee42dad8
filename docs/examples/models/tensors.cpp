// Tensors and Vars in a model's code: method forms, indexing with backward, reading values of
// any dtype, and a Tensor wherever a constant Var is expected.
#include <cstdio>
#include <vector>

#include "autodiff/autodiff.h"

using namespace ruccl;
using namespace ruccl::indexing;  // Slice, None, Ellipsis
using autodiff::Var;

int main() {
  Generator gen(3);
  const Tensor x = Tensor::randn({4, 6}, gen, DType::F64);
  Var w(Tensor::randn({6, 3}, gen, DType::F64), /*requires_grad=*/true);

  // x is a Tensor: it passes as a constant Var, and the methods read like libtorch's.
  Var h = Var(x).matmul(w).relu();                        // [4, 3]
  Var first_two = h.index({Slice(0, 2), Slice()});        // h[0:2, :]
  Var last_column = h.index({Slice(), -1});               // h[:, -1]
  Var loss = first_two.sum() + last_column.mean() * 2.0;  // a scalar
  loss.backward();

  // The gradient reaches w through both indexed views, as torch's does.
  const Tensor g = w.grad();
  std::printf("loss %.6f, grad of w %s, sum |grad| %.6f\n", loss.value().item<double>(),
              g.shape().to_string().c_str(), g.abs().sum().item<double>());

  // Tensor-side indexing: views, steps, a new dim, and writing through index_put_.
  Tensor t = Tensor::arange(0, 12).reshape({3, 4});                  // I64, as torch.arange(12)
  const Tensor every_other = t.index({Slice(), Slice(0, None, 2)});  // t[:, ::2] -> [3, 2]
  t.index_put_({1, Slice()}, 0);                                     // t[1, :] = 0
  const std::vector<std::int64_t> row1 = t.index({1}).to_vector<std::int64_t>();
  const double mean = t.to(DType::F64).mean().item<double>();  // item<T> of any dtype
  const float as_float = t.index({2, 3}).item<float>();        // an I64 read as float
  std::printf(
      "t[:, ::2] %s, t[1] after t[1, :] = 0: %lld %lld %lld %lld, mean %.4f, t[2, 3] %.1f\n",
      every_other.shape().to_string().c_str(), static_cast<long long>(row1[0]),
      static_cast<long long>(row1[1]), static_cast<long long>(row1[2]),
      static_cast<long long>(row1[3]), mean, static_cast<double>(as_float));
  if (row1 != std::vector<std::int64_t>{0, 0, 0, 0} || as_float != 11.0f) return 1;
  std::printf("OK: tensors\n");
  return 0;
}
