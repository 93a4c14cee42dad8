#pragma once
// Elementwise ops with NumPy/PyTorch broadcasting. Binary ops promote dtypes (promote_types) and
// require both operands on one device. Math functions (exp, log, ...) need a floating dtype.
#include "tensor/core/tensor.h"

namespace ruccl {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
/// True division; integer operands give an error (convert to a floating dtype first).
Tensor div(const Tensor& a, const Tensor& b);
/// a ** b elementwise (floating).
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// Tensor-scalar forms: the scalar becomes a 0-d tensor of the tensor's dtype (PyTorch's result
// types: a non-integral scalar with an integer tensor gives F32, an integral one with a Bool
// tensor I64). With F16/BF16 tensors the scalar is rounded to that dtype first.
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
/// The exact (erf) GELU, as torch.nn.functional.gelu's default.
Tensor gelu(const Tensor& x);

// Comparisons give Bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// Tensor-scalar comparisons: the scalar becomes a 0-d tensor as in the arithmetic forms.
Tensor eq(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);
/// Logical ops read any dtype as "nonzero is true" and give Bool.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);

/// cond ? a : b with broadcasting over all three; cond is Bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

/// Same shape and every element equal (NaN != NaN).
bool equal(const Tensor& a, const Tensor& b);
/// |a - b| <= atol + rtol * |b| everywhere, after broadcasting.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);

}  // namespace ruccl
