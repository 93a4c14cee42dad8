#pragma once
// Activation modules (no parameters): wrappers of the Var ops of the same names.
#include "autodiff/nn/module.h"

namespace ruccl::nn {

/// max(x, 0).
class ReLU : public Cloneable<ReLU> {
 public:
  Var forward(const Var& x) override;
};
/// Exact (erf) GELU.
class GELU : public Cloneable<GELU> {
 public:
  Var forward(const Var& x) override;
};
class Tanh : public Cloneable<Tanh> {
 public:
  Var forward(const Var& x) override;
};
class Sigmoid : public Cloneable<Sigmoid> {
 public:
  Var forward(const Var& x) override;
};

}  // namespace ruccl::nn
