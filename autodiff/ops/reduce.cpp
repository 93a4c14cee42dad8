// Reductions and normalisations on Var, each forward with its backward rule beside it.
#include "autodiff/ops/reduce.h"

#include <algorithm>
#include <cmath>

#include "autodiff/node.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/sum_to.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/shape_ops.h"

namespace ruccl::autodiff {

namespace {

// The reduced dims, non-negative and sorted; an empty list means every dim.
std::vector<std::int64_t> reduced_dims(const std::vector<std::int64_t>& dims, std::int64_t ndim,
                                       const char* op) {
  std::vector<std::int64_t> out;
  if (dims.empty()) {
    for (std::int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (std::int64_t d : dims) out.push_back(normalize_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// `shape` with the reduced dims set to 1 (the keepdim shape).
Shape keepdim_shape(const Shape& shape, const std::vector<std::int64_t>& dims) {
  Shape out = shape;
  for (std::int64_t d : dims) out[d] = 1;
  return out;
}

// The gradient of a reduction's output spread back over the input's shape (a broadcast view).
Tensor spread(const Tensor& g, const Shape& input, const std::vector<std::int64_t>& dims) {
  return reshape_grad(g, keepdim_shape(input, dims)).expand(input);
}

Var reduce_sum(const Var& x, const std::vector<std::int64_t>& dims, bool keepdim, bool is_mean) {
  const std::vector<std::int64_t> rd = reduced_dims(dims, x.dim(), is_mean ? "mean" : "sum");
  Tensor out = is_mean ? ruccl::mean(x.value(), rd, keepdim) : ruccl::sum(x.value(), rd, keepdim);
  std::int64_t count = 1;
  for (std::int64_t d : rd) count *= x.shape()[d];
  return make_var(std::move(out), is_mean ? "mean" : "sum", {x},
                  [rd, is_mean, count](const Tensor& g, GradInputs& grads) {
                    Tensor s = is_mean ? ruccl::div(g, static_cast<double>(count)) : g;
                    grads[0] = spread(s, grads.input_shape(0), rd).to(grads.input_dtype(0));
                  });
}

// max/min along one dim: the whole gradient goes to the index arg{max,min} picks.
Var extremum_dim(const Var& x, std::int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  const std::int64_t d = normalize_dim(dim, x.dim(), name);
  Tensor out = is_max ? ruccl::max(x.value(), d, keepdim) : ruccl::min(x.value(), d, keepdim);
  if (!should_record({x})) return Var(std::move(out));
  Tensor index = is_max ? ruccl::argmax(x.value(), d, true) : ruccl::argmin(x.value(), d, true);
  return make_var(std::move(out), name, {x}, [index, d](const Tensor& g, GradInputs& grads) {
    const Shape& shape = grads.input_shape(0);
    Tensor zeros = Tensor::zeros(shape, g.dtype(), g.device());
    grads[0] = ruccl::scatter_add(zeros, d, index, reshape_grad(g, index.shape()));
  });
}

// max/min of every element: ties share the gradient evenly.
Var extremum_all(const Var& x, bool is_max) {
  Tensor out = is_max ? ruccl::max(x.value()) : ruccl::min(x.value());
  return make_var(out, is_max ? "max" : "min", {x},
                  [sx = x.value(), so = out](const Tensor& g, GradInputs& grads) {
                    Tensor mask = ruccl::eq(sx, so).to(sx.dtype());
                    Tensor share = ruccl::div(g, ruccl::sum(mask));
                    grads[0] = ruccl::mul(mask, share);
                  });
}

// Along a dim longer than this, products_of_others works in two levels (blocks of about sqrt(n)),
// so that its slice-at-a-time passes issue O(sqrt(n)) tensor ops instead of O(n).
constexpr std::int64_t kDirectOthers = 64;

// The product of every element along `d` except the one at each position: prefix products times
// suffix products, one slice at a time (no division, so zeros in `x` are exact).
Tensor products_of_others(const Tensor& x, std::int64_t d) {
  const std::int64_t n = x.shape()[d];
  if (n == 0) return Tensor::zeros(x.shape(), x.dtype(), x.device());
  if (n > kDirectOthers) {
    // Pad d with ones to a x b, view it as [.., a, b, ..]: the others of an element are the others
    // inside its block times the products of the other blocks.
    const auto b = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
    const std::int64_t a = (n + b - 1) / b;
    Tensor padded = x;
    if (a * b > n) {
      Shape pad = x.shape();
      pad[d] = a * b - n;
      padded = ruccl::cat({x, Tensor::ones(pad, x.dtype(), x.device())}, d);
    }
    std::vector<std::int64_t> split;
    for (std::int64_t i = 0; i < padded.dim(); ++i) {
      if (i == d) {
        split.push_back(a);
        split.push_back(b);
      } else {
        split.push_back(padded.shape()[i]);
      }
    }
    const Tensor blocks = padded.reshape(Shape(split));
    const Tensor within = products_of_others(blocks, d + 1);
    const Tensor across = products_of_others(ruccl::prod(blocks, d + 1, /*keepdim=*/true), d);
    return ruccl::mul(within, across).reshape(padded.shape()).narrow(d, 0, n);
  }
  std::vector<Tensor> prefix(static_cast<std::size_t>(n));
  Shape slice = x.shape();
  slice[d] = 1;
  Tensor running = Tensor::ones(slice, x.dtype(), x.device());
  for (std::int64_t i = 0; i < n; ++i) {
    prefix[static_cast<std::size_t>(i)] = running;
    running = ruccl::mul(running, x.narrow(d, i, 1));
  }
  running = Tensor::ones(slice, x.dtype(), x.device());
  for (std::int64_t i = n - 1; i >= 0; --i) {
    Tensor& p = prefix[static_cast<std::size_t>(i)];
    p = ruccl::mul(p, running);
    running = ruccl::mul(running, x.narrow(d, i, 1));
  }
  return ruccl::cat(prefix, d);
}

}  // namespace

Var prod(const Var& x, std::int64_t dim, bool keepdim) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "prod");
  Tensor out = ruccl::prod(x.value(), d, keepdim);
  return make_var(
      std::move(out), "prod", {x}, [sx = x.value(), d](const Tensor& g, GradInputs& grads) {
        Tensor spread_g = spread(g, sx.shape(), {d});
        grads[0] = ruccl::mul(spread_g, products_of_others(sx, d)).to(grads.input_dtype(0));
      });
}

Var prod(const Var& x) {
  Tensor out = ruccl::prod(x.value());
  return make_var(std::move(out), "prod", {x},
                  [sx = x.value()](const Tensor& g, GradInputs& grads) {
                    const Tensor flat = sx.reshape({sx.numel()});
                    grads[0] = ruccl::mul(g, products_of_others(flat, 0)).reshape(sx.shape());
                  });
}

Var sum(const Var& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return reduce_sum(x, dims, keepdim, false);
}
Var sum(const Var& x, std::int64_t dim, bool keepdim) {
  return reduce_sum(x, {dim}, keepdim, false);
}
Var sum(const Var& x) { return reduce_sum(x, {}, false, false); }
Var mean(const Var& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return reduce_sum(x, dims, keepdim, true);
}
Var mean(const Var& x, std::int64_t dim, bool keepdim) {
  return reduce_sum(x, {dim}, keepdim, true);
}
Var mean(const Var& x) { return reduce_sum(x, {}, false, true); }

Var max(const Var& x, std::int64_t dim, bool keepdim) {
  return extremum_dim(x, dim, keepdim, true);
}
Var max(const Var& x) { return extremum_all(x, true); }
Var min(const Var& x, std::int64_t dim, bool keepdim) {
  return extremum_dim(x, dim, keepdim, false);
}
Var min(const Var& x) { return extremum_all(x, false); }

Var var(const Var& x, const std::vector<std::int64_t>& dims, std::int64_t correction,
        bool keepdim) {
  const std::vector<std::int64_t> rd = reduced_dims(dims, x.dim(), "var");
  std::int64_t count = 1;
  for (std::int64_t d : rd) count *= x.shape()[d];
  Var centered = sub(x, mean(x, rd, /*keepdim=*/true));
  return div(sum(mul(centered, centered), rd, keepdim),
             static_cast<double>(std::max<std::int64_t>(count - correction, 0)));
}

Var softmax(const Var& x, std::int64_t dim) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "softmax");
  Tensor out = ruccl::softmax(x.value(), d);
  // d/dx = y * (g - sum(g * y, dim)).
  return make_var(out, "softmax", {x}, [so = out, d](const Tensor& g, GradInputs& grads) {
    Tensor dot = ruccl::sum(ruccl::mul(g, so), d, /*keepdim=*/true);
    grads[0] = ruccl::mul(so, ruccl::sub(g, dot));
  });
}

Var log_softmax(const Var& x, std::int64_t dim) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "log_softmax");
  Tensor out = ruccl::log_softmax(x.value(), d);
  // d/dx = g - softmax(x) * sum(g, dim).
  return make_var(out, "log_softmax", {x}, [so = out, d](const Tensor& g, GradInputs& grads) {
    Tensor total = ruccl::sum(g, d, /*keepdim=*/true);
    grads[0] = ruccl::sub(g, ruccl::mul(ruccl::exp(so), total));
  });
}

Tensor argmax(const Var& x, std::int64_t dim, bool keepdim) {
  return ruccl::argmax(x.value(), dim, keepdim);
}

}  // namespace ruccl::autodiff
