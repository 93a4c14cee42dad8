// The element-wise math of issue 30 on Var: each forward with its backward rule beside it. The
// backward reuses the forward's output where that is cheaper than recomputing (rsqrt, expm1).
#include "autodiff/ops/elementwise_math.h"

#include <cmath>

#include "autodiff/node.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff {

namespace {

Tensor zero_like_dtype(const Tensor& t) { return Tensor::scalar(0, t.dtype(), t.device()); }

}  // namespace

Var sin(const Var& x) {
  return make_var(ruccl::sin(x.value()), "sin", {x},
                  [sx = x.value()](const Tensor& g, GradInputs& grads) {
                    grads[0] = ruccl::mul(g, ruccl::cos(sx));
                  });
}

Var cos(const Var& x) {
  return make_var(ruccl::cos(x.value()), "cos", {x},
                  [sx = x.value()](const Tensor& g, GradInputs& grads) {
                    grads[0] = ruccl::neg(ruccl::mul(g, ruccl::sin(sx)));
                  });
}

Var silu(const Var& x) {
  // d/dx x s(x) = s + x s (1 - s) = s (1 + x (1 - s)).
  return make_var(
      ruccl::silu(x.value()), "silu", {x}, [sx = x.value()](const Tensor& g, GradInputs& grads) {
        const Tensor s = ruccl::sigmoid(sx);
        const Tensor d = ruccl::mul(s, ruccl::add(ruccl::mul(sx, ruccl::operator-(1.0, s)), 1.0));
        grads[0] = ruccl::mul(g, d);
      });
}

Var softplus(const Var& x, double beta, double threshold) {
  // d/dx log(1 + e^(beta x)) / beta = sigmoid(beta x); 1 in the linear region beta x > threshold.
  return make_var(ruccl::softplus(x.value(), beta, threshold), "softplus", {x},
                  [sx = x.value(), beta, threshold](const Tensor& g, GradInputs& grads) {
                    const Tensor z = ruccl::mul(sx, beta);
                    grads[0] =
                        ruccl::where(ruccl::gt(z, threshold), g, ruccl::mul(g, ruccl::sigmoid(z)));
                  });
}

Var leaky_relu(const Var& x, double negative_slope) {
  return make_var(ruccl::leaky_relu(x.value(), negative_slope), "leaky_relu", {x},
                  [sx = x.value(), negative_slope](const Tensor& g, GradInputs& grads) {
                    grads[0] = ruccl::where(ruccl::gt(sx, 0), g, ruccl::mul(g, negative_slope));
                  });
}

Var elu(const Var& x, double alpha) {
  return make_var(ruccl::elu(x.value(), alpha), "elu", {x},
                  [sx = x.value(), alpha](const Tensor& g, GradInputs& grads) {
                    const Tensor neg_side = ruccl::mul(g, ruccl::mul(ruccl::exp(sx), alpha));
                    grads[0] = ruccl::where(ruccl::gt(sx, 0), g, neg_side);
                  });
}

Var clamp(const Var& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  return make_var(ruccl::clamp(x.value(), min, max), "clamp", {x},
                  [sx = x.value(), min, max](const Tensor& g, GradInputs& grads) {
                    Tensor inside;
                    if (min) inside = ruccl::ge(sx, *min);
                    if (max) {
                      const Tensor below = ruccl::le(sx, *max);
                      inside = inside.defined() ? ruccl::logical_and(inside, below) : below;
                    }
                    grads[0] = ruccl::where(inside, g, zero_like_dtype(g));
                  });
}

Var rsqrt(const Var& x) {
  Tensor out = ruccl::rsqrt(x.value());
  // d/dx x^(-1/2) = -x^(-3/2) / 2 = -out^3 / 2.
  return make_var(out, "rsqrt", {x}, [so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::mul(g, ruccl::mul(ruccl::mul(so, ruccl::mul(so, so)), -0.5));
  });
}

Var erf(const Var& x) {
  return make_var(ruccl::erf(x.value()), "erf", {x},
                  [sx = x.value()](const Tensor& g, GradInputs& grads) {
                    const double two_over_sqrt_pi = 2.0 / std::sqrt(M_PI);
                    const Tensor d = ruccl::exp(ruccl::neg(ruccl::mul(sx, sx)));
                    grads[0] = ruccl::mul(g, ruccl::mul(d, two_over_sqrt_pi));
                  });
}

Var log1p(const Var& x) {
  return make_var(ruccl::log1p(x.value()), "log1p", {x},
                  [sx = x.value()](const Tensor& g, GradInputs& grads) {
                    grads[0] = ruccl::div(g, ruccl::add(sx, 1.0));
                  });
}

Var expm1(const Var& x) {
  Tensor out = ruccl::expm1(x.value());
  return make_var(out, "expm1", {x}, [so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::mul(g, ruccl::add(so, 1.0));
  });
}

}  // namespace ruccl::autodiff
