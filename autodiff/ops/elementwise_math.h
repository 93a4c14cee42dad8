#pragma once
// Differentiable versions of the element-wise math of tensor/ops/elementwise.h that models reach
// for (issue 30): same names, parameters and semantics; each backward sits beside its forward in
// elementwise_math.cpp (rules in docs/autodiff.md).
#include <optional>

#include "autodiff/var.h"
#include "tensor/core/scalar.h"

namespace ruccl::autodiff {

/// d/dx = cos(x).
Var sin(const Var& x);
/// d/dx = -sin(x).
Var cos(const Var& x);
/// x sigmoid(x); d/dx = s (1 + x (1 - s)) with s = sigmoid(x).
Var silu(const Var& x);
/// log(1 + e^(beta x)) / beta (x above threshold); d/dx = sigmoid(beta x), 1 above threshold.
Var softplus(const Var& x, double beta = 1.0, double threshold = 20.0);
/// d/dx = 1 for x > 0, negative_slope otherwise (at 0 too, as torch).
Var leaky_relu(const Var& x, double negative_slope = 0.01);
/// d/dx = 1 for x > 0, alpha e^x otherwise.
Var elu(const Var& x, double alpha = 1.0);
/// d/dx = 1 where min <= x <= max (bounds included, as torch), 0 elsewhere.
Var clamp(const Var& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
/// d/dx = -rsqrt(x)^3 / 2.
Var rsqrt(const Var& x);
/// d/dx = 2 / sqrt(pi) e^(-x^2).
Var erf(const Var& x);
/// d/dx = 1 / (1 + x).
Var log1p(const Var& x);
/// d/dx = e^x = expm1(x) + 1.
Var expm1(const Var& x);

}  // namespace ruccl::autodiff
