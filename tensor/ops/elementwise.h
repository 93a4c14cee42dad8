#pragma once
// Elementwise ops with NumPy/PyTorch broadcasting. Binary ops promote dtypes (promote_types) and
// require both operands on one device. Math functions (exp, log, sqrt, tanh, sigmoid, gelu, pow,
// div) need a floating dtype: integer inputs are a DTypeError (convert with to(DType::F32)).
// Integers keep their width and wrap on overflow; Bool takes only comparisons, logical ops and
// where. F16/BF16 compute in F32 and round once on store. Errors name the op and say
// "expected X, got Y": ShapeError (no broadcast), DTypeError, DeviceError (mixed devices).
//
//   Tensor y = relu(x * w + b);       // [N, C] * [C] + [C]
//   Tensor mask = gt(y, 0.5);          // Bool
#include <optional>

#include "tensor/core/tensor.h"

namespace ruccl {

/// a + b (numeric dtypes).
Tensor add(const Tensor& a, const Tensor& b);
/// a - b (numeric dtypes).
Tensor sub(const Tensor& a, const Tensor& b);
/// a * b (numeric dtypes).
Tensor mul(const Tensor& a, const Tensor& b);
/// True division; integer operands give an error (convert to a floating dtype first).
Tensor div(const Tensor& a, const Tensor& b);
/// a ** b elementwise (floating).
Tensor pow(const Tensor& a, const Tensor& b);
/// a ** exponent elementwise (floating).
Tensor pow(const Tensor& a, Scalar exponent);
/// Elementwise larger value; a NaN on either side gives NaN (torch.maximum).
Tensor maximum(const Tensor& a, const Tensor& b);
/// Elementwise smaller value; a NaN on either side gives NaN.
Tensor minimum(const Tensor& a, const Tensor& b);

// Tensor-scalar forms: the scalar becomes a 0-d tensor of the tensor's dtype (PyTorch's result
// types: a non-integral scalar with an integer tensor gives F32, an integral one with a Bool
// tensor I64). With F16/BF16 tensors the scalar is rounded to that dtype first.
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);

/// -x (numeric dtypes).
Tensor neg(const Tensor& x);
/// e ** x (floating).
Tensor exp(const Tensor& x);
/// Natural logarithm (floating); log(0) = -inf, log(x < 0) = NaN.
Tensor log(const Tensor& x);
/// Square root (floating); NaN for x < 0.
Tensor sqrt(const Tensor& x);
/// |x| (numeric dtypes).
Tensor abs(const Tensor& x);
/// -1, 0 or 1 in x's dtype (numeric dtypes); sign(NaN) = 0 as torch.sign.
Tensor sign(const Tensor& x);
/// Hyperbolic tangent (floating).
Tensor tanh(const Tensor& x);
/// 1 / (1 + e ** -x) (floating).
Tensor sigmoid(const Tensor& x);
/// max(x, 0) (numeric dtypes); relu(NaN) = NaN.
Tensor relu(const Tensor& x);
/// The exact (erf) GELU, as torch.nn.functional.gelu's default.
Tensor gelu(const Tensor& x);

// ---- The element-wise math models reach for (issue 30), PyTorch's names and formulas ----------
/// sin(x) (floating).
Tensor sin(const Tensor& x);
/// cos(x) (floating).
Tensor cos(const Tensor& x);
/// x * sigmoid(x), a.k.a. swish (floating).
Tensor silu(const Tensor& x);
/// 1 / sqrt(x) (floating); inf at 0, NaN below.
Tensor rsqrt(const Tensor& x);
/// The error function (floating).
Tensor erf(const Tensor& x);
/// log(1 + x), accurate for small x (floating).
Tensor log1p(const Tensor& x);
/// e^x - 1, accurate for small x (floating).
Tensor expm1(const Tensor& x);
/// x > 0 ? x : negative_slope * x (floating).
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// x > 0 ? x : alpha * (e^x - 1) (floating).
Tensor elu(const Tensor& x, double alpha = 1.0);
/// log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (torch's linear region)
/// (floating; beta = 0 is a ValueError).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
/// min(max(x, min), max) (numeric dtypes, PyTorch's result type with a scalar bound); either
/// bound may be absent, not both (ValueError). NaN stays NaN; min > max gives max everywhere.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
/// Bool: x is NaN (any dtype; integers and Bool never are).
Tensor isnan(const Tensor& x);
/// Bool: x is neither infinite nor NaN (any dtype; integers and Bool always are).
Tensor isfinite(const Tensor& x);

// Comparisons give Bool tensors.
/// a == b (any dtypes, promoted); NaN is unequal to everything.
Tensor eq(const Tensor& a, const Tensor& b);
/// a != b.
Tensor ne(const Tensor& a, const Tensor& b);
/// a < b.
Tensor lt(const Tensor& a, const Tensor& b);
/// a <= b.
Tensor le(const Tensor& a, const Tensor& b);
/// a > b.
Tensor gt(const Tensor& a, const Tensor& b);
/// a >= b.
Tensor ge(const Tensor& a, const Tensor& b);
// Tensor-scalar comparisons: the scalar becomes a 0-d tensor as in the arithmetic forms.
Tensor eq(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);
/// a && b. Logical ops read any dtype as "nonzero is true" and give Bool.
Tensor logical_and(const Tensor& a, const Tensor& b);
/// a || b.
Tensor logical_or(const Tensor& a, const Tensor& b);
/// !x.
Tensor logical_not(const Tensor& x);

/// cond ? a : b with broadcasting over all three; cond is Bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

/// Same shape and every element equal (NaN != NaN).
bool equal(const Tensor& a, const Tensor& b);
/// |a - b| <= atol + rtol * |b| everywhere, after broadcasting (computed in F64; equal
/// infinities are close, NaN never is).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

// Operators: the functions above (a + b is add(a, b), -x is neg(x), 2 * x is mul(2, x)).
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
