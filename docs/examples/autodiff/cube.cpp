// Adding an op (docs/autodiff.md): cube with its backward rule beside it, checked by gradcheck in
// float64 against central differences.
#include <cstdio>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
using namespace ruccl;
using namespace ruccl::autodiff;

// doc-begin
Var cube(const Var& x) {
  Tensor v = x.value();
  return make_var(ruccl::mul(ruccl::mul(v, v), v), "cube", {x},
                  [v](const Tensor& g, GradInputs& grads) {  // captures = what backward saves
                    grads[0] = ruccl::mul(g, ruccl::mul(ruccl::mul(v, v), 3.0));
                  });
}
// doc-end

int main() {
  const Var x(Tensor::from_vector<double>({-1.5, 0.25, 2.0}, {3}), true);
  if (!gradcheck([](const std::vector<Var>& in) { return cube(in[0]); }, {x}).ok) return 1;
  Var y = sum(cube(x));
  y.backward();
  if (x.grad().to_vector<double>() != std::vector<double>{6.75, 0.1875, 12.0}) return 1;
  std::printf("OK: cube\n");
}
