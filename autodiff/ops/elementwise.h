#pragma once
// Differentiable elementwise ops on Var, with broadcasting (gradients are summed back to each
// input's shape). Same names and semantics as the Tensor ops in tensor/ops/elementwise.h.
#include "autodiff/var.h"
#include "tensor/core/scalar.h"

namespace ruccl::autodiff {

Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
/// a ** b; d/db = a^b * log(a) (NaN for a < 0, as PyTorch).
Var pow(const Var& a, const Var& b);
/// a ** exponent.
Var pow(const Var& a, Scalar exponent);
/// Elementwise larger value; where a == b the gradient is split in half between a and b (PyTorch).
Var maximum(const Var& a, const Var& b);
/// Elementwise smaller value; ties split the gradient in half (PyTorch).
Var minimum(const Var& a, const Var& b);

Var add(const Var& a, Scalar b);
Var sub(const Var& a, Scalar b);
Var mul(const Var& a, Scalar b);
Var div(const Var& a, Scalar b);
/// a - x for a scalar a.
Var rsub(const Var& x, Scalar a);
/// a / x for a scalar a.
Var rdiv(const Var& x, Scalar a);

Var neg(const Var& x);
Var exp(const Var& x);
Var log(const Var& x);
Var sqrt(const Var& x);
/// |x|; the gradient at 0 is 0 (sign(0) = 0, as PyTorch).
Var abs(const Var& x);
Var tanh(const Var& x);
Var sigmoid(const Var& x);
/// max(x, 0); the gradient at 0 is 0 (as PyTorch).
Var relu(const Var& x);
/// Exact (erf) GELU; d/dx = Phi(x) + x * phi(x).
Var gelu(const Var& x);

/// cond ? a : b with broadcasting; cond is a Bool tensor (not differentiable).
Var where(const Tensor& cond, const Var& a, const Var& b);
/// x converted to `dtype` (floating); the gradient is converted back to x's dtype.
Var to(const Var& x, DType dtype);

Var operator+(const Var& a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator/(const Var& a, const Var& b);
Var operator-(const Var& x);
Var operator+(const Var& a, Scalar b);
Var operator-(const Var& a, Scalar b);
Var operator*(const Var& a, Scalar b);
Var operator/(const Var& a, Scalar b);
Var operator+(Scalar a, const Var& b);
Var operator-(Scalar a, const Var& b);
Var operator*(Scalar a, const Var& b);
Var operator/(Scalar a, const Var& b);

}  // namespace ruccl::autodiff
