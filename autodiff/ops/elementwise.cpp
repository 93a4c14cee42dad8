// Elementwise ops on Var: each forward with its backward rule beside it. Broadcasting is undone by
// sum_to; a result of a promoted dtype is converted back to each input's dtype (fit).
#include "autodiff/ops/elementwise.h"

#include <cmath>

#include "autodiff/node.h"
#include "autodiff/ops/sum_to.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff {

namespace {

// d root / d input_i from a gradient of the (broadcast, promoted) output's shape.
Tensor fit(const Tensor& g, const GradInputs& grads, std::size_t i) {
  return sum_to(g, grads.input_shape(i)).to(grads.input_dtype(i));
}

// Saves `t` only when `needed`: backward keeps no more than it uses.
Tensor keep_if(bool needed, const Tensor& t) { return needed ? t : Tensor(); }

Tensor zero_like_dtype(const Tensor& t) { return Tensor::scalar(0, t.dtype(), t.device()); }

}  // namespace

// ---- binary
// --------------------------------------------------------------------------------------

Var add(const Var& a, const Var& b) {
  return make_var(ruccl::add(a.value(), b.value()), "add", {a, b},
                  [](const Tensor& g, GradInputs& grads) {
                    if (grads.needed(0)) grads[0] = fit(g, grads, 0);
                    if (grads.needed(1)) grads[1] = fit(g, grads, 1);
                  });
}

Var sub(const Var& a, const Var& b) {
  return make_var(ruccl::sub(a.value(), b.value()), "sub", {a, b},
                  [](const Tensor& g, GradInputs& grads) {
                    if (grads.needed(0)) grads[0] = fit(g, grads, 0);
                    if (grads.needed(1)) grads[1] = fit(ruccl::neg(g), grads, 1);
                  });
}

Var mul(const Var& a, const Var& b) {
  Tensor out = ruccl::mul(a.value(), b.value());
  if (!should_record({a, b})) return Var(std::move(out));
  return make_var(std::move(out), "mul", {a, b},
                  [sa = keep_if(b.requires_grad(), a.value()),
                   sb = keep_if(a.requires_grad(), b.value())](const Tensor& g, GradInputs& grads) {
                    if (grads.needed(0)) grads[0] = fit(ruccl::mul(g, sb), grads, 0);
                    if (grads.needed(1)) grads[1] = fit(ruccl::mul(g, sa), grads, 1);
                  });
}

Var div(const Var& a, const Var& b) {
  Tensor out = ruccl::div(a.value(), b.value());
  if (!should_record({a, b})) return Var(std::move(out));
  // d/da = g / b; d/db = -g * a / b^2 = -g * out / b.
  return make_var(
      out, "div", {a, b},
      [sb = b.value(), so = keep_if(b.requires_grad(), out)](const Tensor& g, GradInputs& grads) {
        Tensor ga = ruccl::div(g, sb);
        if (grads.needed(1)) grads[1] = fit(ruccl::neg(ruccl::mul(ga, so)), grads, 1);
        if (grads.needed(0)) grads[0] = fit(ga, grads, 0);
      });
}

Var pow(const Var& a, const Var& b) {
  Tensor out = ruccl::pow(a.value(), b.value());
  if (!should_record({a, b})) return Var(std::move(out));
  // d/da = g * b * a^(b - 1); d/db = g * out * log(a).
  return make_var(out, "pow", {a, b},
                  [sa = a.value(), sb = b.value(), so = keep_if(b.requires_grad(), out)](
                      const Tensor& g, GradInputs& grads) {
                    if (grads.needed(0)) {
                      Tensor d = ruccl::mul(sb, ruccl::pow(sa, ruccl::sub(sb, 1)));
                      grads[0] = fit(ruccl::mul(g, d), grads, 0);
                    }
                    if (grads.needed(1)) {
                      grads[1] = fit(ruccl::mul(g, ruccl::mul(so, ruccl::log(sa))), grads, 1);
                    }
                  });
}

Var pow(const Var& a, Scalar exponent) {
  Tensor out = ruccl::pow(a.value(), exponent);
  if (!should_record({a})) return Var(std::move(out));
  // d/da = g * e * a^(e - 1).
  return make_var(std::move(out), "pow", {a},
                  [sa = a.value(), e = exponent.to_double()](const Tensor& g, GradInputs& grads) {
                    Tensor d =
                        e == 0.0 ? ruccl::mul(sa, 0.0) : ruccl::mul(ruccl::pow(sa, e - 1.0), e);
                    grads[0] = ruccl::mul(g, d);
                  });
}

namespace {
// maximum/minimum: the winner takes the gradient; ties split it in half (PyTorch).
Var extremum(const Var& a, const Var& b, bool is_max) {
  Tensor out = is_max ? ruccl::maximum(a.value(), b.value()) : ruccl::minimum(a.value(), b.value());
  return make_var(std::move(out), is_max ? "maximum" : "minimum", {a, b},
                  [sa = a.value(), sb = b.value(), is_max](const Tensor& g, GradInputs& grads) {
                    Tensor zero = zero_like_dtype(g);
                    Tensor half = ruccl::mul(g, 0.5);
                    Tensor tie = ruccl::eq(sa, sb);
                    Tensor a_wins = is_max ? ruccl::gt(sa, sb) : ruccl::lt(sa, sb);
                    Tensor b_wins = is_max ? ruccl::lt(sa, sb) : ruccl::gt(sa, sb);
                    if (grads.needed(0)) {
                      Tensor ga = ruccl::where(a_wins, g, ruccl::where(tie, half, zero));
                      grads[0] = fit(ga, grads, 0);
                    }
                    if (grads.needed(1)) {
                      Tensor gb = ruccl::where(b_wins, g, ruccl::where(tie, half, zero));
                      grads[1] = fit(gb, grads, 1);
                    }
                  });
}
}  // namespace

Var maximum(const Var& a, const Var& b) { return extremum(a, b, true); }
Var minimum(const Var& a, const Var& b) { return extremum(a, b, false); }

// ---- with a scalar
// -------------------------------------------------------------------------------

Var add(const Var& a, Scalar b) {
  return make_var(ruccl::add(a.value(), b), "add", {a},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = g; });
}

Var sub(const Var& a, Scalar b) {
  return make_var(ruccl::sub(a.value(), b), "sub", {a},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = g; });
}

Var mul(const Var& a, Scalar b) {
  return make_var(ruccl::mul(a.value(), b), "mul", {a},
                  [b](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::mul(g, b); });
}

Var div(const Var& a, Scalar b) {
  return make_var(ruccl::div(a.value(), b), "div", {a},
                  [b](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::div(g, b); });
}

Var rsub(const Var& x, Scalar a) {
  return make_var(ruccl::operator-(a, x.value()), "rsub", {x},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::neg(g); });
}

Var rdiv(const Var& x, Scalar a) {
  Tensor out = ruccl::operator/(a, x.value());
  if (!should_record({x})) return Var(std::move(out));
  // d/dx (a / x) = -a / x^2 = -out / x.
  return make_var(out, "rdiv", {x}, [sx = x.value(), so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::neg(ruccl::mul(g, ruccl::div(so, sx)));
  });
}

// ---- unary
// ---------------------------------------------------------------------------------------

Var neg(const Var& x) {
  return make_var(ruccl::neg(x.value()), "neg", {x},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::neg(g); });
}

Var exp(const Var& x) {
  Tensor out = ruccl::exp(x.value());
  return make_var(out, "exp", {x},
                  [so = out](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::mul(g, so); });
}

Var log(const Var& x) {
  return make_var(
      ruccl::log(x.value()), "log", {x},
      [sx = x.value()](const Tensor& g, GradInputs& grads) { grads[0] = ruccl::div(g, sx); });
}

Var sqrt(const Var& x) {
  Tensor out = ruccl::sqrt(x.value());
  // d/dx sqrt(x) = 1 / (2 sqrt(x)).
  return make_var(out, "sqrt", {x}, [so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::div(ruccl::mul(g, 0.5), so);
  });
}

Var abs(const Var& x) {
  // d/dx |x| = sign(x); 0 at x = 0.
  return make_var(ruccl::abs(x.value()), "abs", {x},
                  [sx = x.value()](const Tensor& g, GradInputs& grads) {
                    grads[0] = ruccl::mul(g, ruccl::sign(sx));
                  });
}

Var tanh(const Var& x) {
  Tensor out = ruccl::tanh(x.value());
  // d/dx tanh(x) = 1 - tanh(x)^2.
  return make_var(out, "tanh", {x}, [so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::mul(g, ruccl::operator-(1.0, ruccl::mul(so, so)));
  });
}

Var sigmoid(const Var& x) {
  Tensor out = ruccl::sigmoid(x.value());
  // d/dx sigmoid(x) = s (1 - s).
  return make_var(out, "sigmoid", {x}, [so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::mul(g, ruccl::mul(so, ruccl::operator-(1.0, so)));
  });
}

Var relu(const Var& x) {
  Tensor out = ruccl::relu(x.value());
  // Gradient where out > 0 (x > 0); 0 at x = 0.
  return make_var(out, "relu", {x}, [so = out](const Tensor& g, GradInputs& grads) {
    grads[0] = ruccl::where(ruccl::gt(so, 0), g, zero_like_dtype(g));
  });
}

Var gelu(const Var& x) {
  Tensor out = ruccl::gelu(x.value());
  if (!should_record({x})) return Var(std::move(out));
  // d/dx x Phi(x) = Phi(x) + x phi(x). The tensor layer has no erf: Phi(x) = gelu(x) / x, and
  // Phi(0) = 1/2. phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
  return make_var(out, "gelu", {x}, [sx = x.value(), so = out](const Tensor& g, GradInputs& grads) {
    const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * M_PI);
    Tensor cdf = ruccl::where(ruccl::eq(sx, 0), Tensor::scalar(0.5, sx.dtype(), sx.device()),
                              ruccl::div(so, sx));
    Tensor pdf = ruccl::mul(ruccl::exp(ruccl::mul(ruccl::mul(sx, sx), -0.5)), inv_sqrt_2pi);
    grads[0] = ruccl::mul(g, ruccl::add(cdf, ruccl::mul(sx, pdf)));
  });
}

Var where(const Tensor& cond, const Var& a, const Var& b) {
  return make_var(ruccl::where(cond, a.value(), b.value()), "where", {a, b},
                  [cond](const Tensor& g, GradInputs& grads) {
                    Tensor zero = zero_like_dtype(g);
                    if (grads.needed(0)) grads[0] = fit(ruccl::where(cond, g, zero), grads, 0);
                    if (grads.needed(1)) grads[1] = fit(ruccl::where(cond, zero, g), grads, 1);
                  });
}

Var to(const Var& x, DType dtype) {
  return make_var(x.value().to(dtype), "to", {x}, [](const Tensor& g, GradInputs& grads) {
    grads[0] = g.to(grads.input_dtype(0));
  });
}

// ---- operators
// -----------------------------------------------------------------------------------

Var operator+(const Var& a, const Var& b) { return add(a, b); }
Var operator-(const Var& a, const Var& b) { return sub(a, b); }
Var operator*(const Var& a, const Var& b) { return mul(a, b); }
Var operator/(const Var& a, const Var& b) { return div(a, b); }
Var operator-(const Var& x) { return neg(x); }
Var operator+(const Var& a, Scalar b) { return add(a, b); }
Var operator-(const Var& a, Scalar b) { return sub(a, b); }
Var operator*(const Var& a, Scalar b) { return mul(a, b); }
Var operator/(const Var& a, Scalar b) { return div(a, b); }
Var operator+(Scalar a, const Var& b) { return add(b, a); }
Var operator-(Scalar a, const Var& b) { return rsub(b, a); }
Var operator*(Scalar a, const Var& b) { return mul(b, a); }
Var operator/(Scalar a, const Var& b) { return rdiv(b, a); }

}  // namespace ruccl::autodiff
