#include "autodiff/nn/dropout.h"

#include "autodiff/ops/elementwise.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::nn {

Dropout::Dropout(double p)
    : Dropout(p, with_default_generator([](Generator& g) { return g.next_u64(); })) {}

Dropout::Dropout(double p, std::uint64_t seed)
    : p_(p), gen_(register_generator("generator", Generator(seed))) {
  RUCCL_CHECK(p >= 0.0 && p < 1.0, ValueError, "Dropout: expected 0 <= p < 1, got ", p);
}

Var Dropout::forward(const Var& x) {
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError, describe(), ": expected a floating input, got ",
              x.dtype());
  if (!is_training() || p_ == 0.0) return x;
  return dropout_with(x, p_, generator());
}

Var dropout_with(const Var& x, double p, Generator& gen) {
  const Device device = x.value().device();
  const Tensor u = Tensor::rand(x.shape(), gen, DType::F64, device);
  const Tensor keep = ruccl::ge(u, Tensor::scalar(p, DType::F64, device));
  return autodiff::mul(x, Var(ruccl::div(keep.to(x.dtype()), 1.0 - p)));
}

}  // namespace ruccl::nn
