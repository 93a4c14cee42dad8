#include "autodiff/nn/activation.h"

#include "autodiff/ops/elementwise.h"

namespace ruccl::nn {

Var ReLU::forward(const Var& x) { return autodiff::relu(x); }
Var GELU::forward(const Var& x) { return autodiff::gelu(x); }
Var Tanh::forward(const Var& x) { return autodiff::tanh(x); }
Var Sigmoid::forward(const Var& x) { return autodiff::sigmoid(x); }

}  // namespace ruccl::nn
