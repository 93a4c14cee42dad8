// Shape ops on Var: views in forward, the inverse view (or a zero-padded copy) in backward.
#include "autodiff/ops/shape.h"

#include "autodiff/node.h"
#include "autodiff/ops/sum_to.h"
#include "tensor/ops/pad.h"
#include "tensor/ops/shape_ops.h"

namespace ruccl::autodiff {

namespace {

// Rules whose backward is "give the gradient the input's shape again".
void reshape_back(const Tensor& g, GradInputs& grads) {
  grads[0] = reshape_grad(g, grads.input_shape(0));
}

}  // namespace

Var reshape(const Var& x, const Shape& shape) {
  return make_var(reshape_grad(x.value(), shape), "reshape", {x}, reshape_back);
}

Var transpose(const Var& x, std::int64_t d0, std::int64_t d1) {
  return make_var(x.value().transpose(d0, d1), "transpose", {x},
                  [d0, d1](const Tensor& g, GradInputs& grads) { grads[0] = g.transpose(d0, d1); });
}

Var permute(const Var& x, const std::vector<std::int64_t>& dims) {
  Tensor out = x.value().permute(dims);
  if (!should_record({x})) return Var(std::move(out));
  std::vector<std::int64_t> inverse(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    inverse[static_cast<std::size_t>(normalize_dim(dims[i], x.dim(), "permute"))] =
        static_cast<std::int64_t>(i);
  }
  return make_var(std::move(out), "permute", {x},
                  [inverse = std::move(inverse)](const Tensor& g, GradInputs& grads) {
                    grads[0] = g.permute(inverse);
                  });
}

Var narrow(const Var& x, std::int64_t d, std::int64_t start, std::int64_t length) {
  Tensor out = x.value().narrow(d, start, length);
  const std::int64_t nd = normalize_dim(d, x.dim(), "narrow");
  const std::int64_t st = start < 0 ? start + x.shape()[nd] : start;
  return make_var(std::move(out), "narrow", {x},
                  [nd, st, length](const Tensor& g, GradInputs& grads) {
                    Tensor full = Tensor::zeros(grads.input_shape(0), g.dtype(), g.device());
                    full.narrow(nd, st, length).copy_(g);
                    grads[0] = full;
                  });
}

Var select(const Var& x, std::int64_t d, std::int64_t i) {
  Tensor out = x.value().select(d, i);  // checks d and i
  const std::int64_t nd = normalize_dim(d, x.dim(), "select");
  const std::int64_t at = i < 0 ? i + x.shape()[nd] : i;
  return make_var(std::move(out), "select", {x}, [nd, at](const Tensor& g, GradInputs& grads) {
    Tensor full = Tensor::zeros(grads.input_shape(0), g.dtype(), g.device());
    full.select(nd, at).copy_(g);
    grads[0] = full;
  });
}

Var expand(const Var& x, const Shape& shape) {
  return make_var(x.value().expand(shape), "expand", {x}, [](const Tensor& g, GradInputs& grads) {
    grads[0] = sum_to(g, grads.input_shape(0));
  });
}

Var squeeze(const Var& x, std::int64_t d) {
  return make_var(x.value().squeeze(d), "squeeze", {x}, reshape_back);
}

Var unsqueeze(const Var& x, std::int64_t d) {
  return make_var(x.value().unsqueeze(d), "unsqueeze", {x}, reshape_back);
}

Var flatten(const Var& x, std::int64_t start, std::int64_t end) {
  return make_var(x.value().flatten(start, end), "flatten", {x}, reshape_back);
}

Var unflatten(const Var& x, std::int64_t dim, const std::vector<std::int64_t>& sizes) {
  return make_var(ruccl::unflatten(x.value(), dim, sizes), "unflatten", {x}, reshape_back);
}

Var contiguous(const Var& x) {
  return make_var(x.value().contiguous(), "contiguous", {x},
                  [](const Tensor& g, GradInputs& grads) { grads[0] = g; });
}

Var cat(const std::vector<Var>& xs, std::int64_t dim) {
  RUCCL_CHECK(!xs.empty(), ValueError, "cat: expected at least one input, got none");
  std::vector<Tensor> values;
  values.reserve(xs.size());
  for (const Var& x : xs) values.push_back(x.value());
  Tensor out = ruccl::cat(values, dim);
  const std::int64_t d = normalize_dim(dim, out.dim(), "cat");
  return make_var_list(std::move(out), "cat", xs, [d](const Tensor& g, GradInputs& grads) {
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const std::int64_t n = grads.input_shape(i)[d];
      if (grads.needed(i)) grads[i] = g.narrow(d, offset, n).to(grads.input_dtype(i));
      offset += n;
    }
  });
}

Var stack(const std::vector<Var>& xs, std::int64_t dim) {
  RUCCL_CHECK(!xs.empty(), ValueError, "stack: expected at least one input, got none");
  std::vector<Tensor> values;
  values.reserve(xs.size());
  for (const Var& x : xs) values.push_back(x.value());
  Tensor out = ruccl::stack(values, dim);
  const std::int64_t d = normalize_dim(dim, out.dim(), "stack");
  return make_var_list(std::move(out), "stack", xs, [d](const Tensor& g, GradInputs& grads) {
    for (std::size_t i = 0; i < grads.size(); ++i) {
      if (grads.needed(i)) {
        grads[i] = g.select(d, static_cast<std::int64_t>(i)).to(grads.input_dtype(i));
      }
    }
  });
}

std::vector<Var> split(const Var& x, const std::vector<std::int64_t>& sizes, std::int64_t dim) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "split");
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    RUCCL_CHECK(s >= 0, ValueError, "split: expected non-negative sizes, got ", s);
    total += s;
  }
  RUCCL_CHECK(total == x.shape()[d], ShapeError, "split: expected sizes summing to ", x.shape()[d],
              " (dim ", d, " of ", x.shape(), "), got ", total);
  std::vector<Var> out;
  out.reserve(sizes.size());
  std::int64_t start = 0;
  for (std::int64_t s : sizes) {
    out.push_back(narrow(x, d, start, s));
    start += s;
  }
  return out;
}

std::vector<Var> split(const Var& x, std::int64_t split_size, std::int64_t dim) {
  const std::int64_t d = normalize_dim(dim, x.dim(), "split");
  RUCCL_CHECK(split_size > 0, ValueError, "split: expected a positive split_size, got ",
              split_size);
  const std::int64_t n = x.shape()[d];
  std::vector<std::int64_t> sizes;
  for (std::int64_t start = 0; start < n; start += split_size) {
    sizes.push_back(std::min(split_size, n - start));
  }
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, d);
}

std::vector<Var> chunk(const Var& x, std::int64_t chunks, std::int64_t dim) {
  RUCCL_CHECK(chunks > 0, ValueError, "chunk: expected a positive number of chunks, got ", chunks);
  const std::int64_t d = normalize_dim(dim, x.dim(), "chunk");
  const std::int64_t n = x.shape()[d];
  return split(x, std::max<std::int64_t>((n + chunks - 1) / chunks, 1), d);
}

}  // namespace ruccl::autodiff
