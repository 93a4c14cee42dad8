// Linear algebra on Var, each forward with its backward rule beside it.
#include "autodiff/ops/linalg.h"

#include "autodiff/node.h"
#include "autodiff/ops/sum_to.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"

namespace ruccl::autodiff {

namespace {

// The matrix transpose of the last two dims.
Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

}  // namespace

Var matmul(const Var& a, const Var& b) {
  Tensor out = ruccl::matmul(a.value(), b.value());
  if (!should_record({a, b})) return Var(std::move(out));
  // Promote 1-d operands to matrices ([k] -> [1, k] on the left, [k, 1] on the right), so that
  // dA = g @ B^T and dB = A^T @ g hold; broadcast batch dims are then summed back by sum_to.
  Tensor a2 = a.dim() == 1 ? a.value().unsqueeze(0) : a.value();
  Tensor b2 = b.dim() == 1 ? b.value().unsqueeze(1) : b.value();
  const bool a_vec = a.dim() == 1;
  const bool b_vec = b.dim() == 1;
  return make_var(
      std::move(out), "matmul", {a, b},
      [sa = b.requires_grad() ? a2 : Tensor(), sb = a.requires_grad() ? b2 : Tensor(), a_vec, b_vec,
       a_shape2 = a2.shape(), b_shape2 = b2.shape()](const Tensor& g, GradInputs& grads) {
        // g has the output's shape; restore the promoted dims: [..., n, m].
        Tensor g2 = g;
        if (a_vec) g2 = g2.unsqueeze(b_vec ? g2.dim() : g2.dim() - 1);  // the row dim n = 1
        if (b_vec) g2 = g2.unsqueeze(g2.dim());                         // the column dim m = 1
        if (grads.needed(0)) {
          Tensor ga = sum_to(ruccl::matmul(g2, mT(sb)), a_shape2);
          grads[0] = reshape_grad(ga, grads.input_shape(0));
        }
        if (grads.needed(1)) {
          Tensor gb = sum_to(ruccl::matmul(mT(sa), g2), b_shape2);
          grads[1] = reshape_grad(gb, grads.input_shape(1));
        }
      });
}

Var linear(const Var& x, const Var& weight, const Var& bias) {
  RUCCL_CHECK(weight.dim() == 2, ShapeError, "linear: expected a weight of shape [out, in], got ",
              weight.shape());
  const std::int64_t in = weight.shape()[1];
  const std::int64_t outf = weight.shape()[0];
  RUCCL_CHECK(x.dim() >= 1 && x.shape()[x.dim() - 1] == in, ShapeError,
              "linear: expected an input whose last dim is ", in, " (weight ", weight.shape(),
              "), got ", x.shape());
  const bool has_bias = bias.defined();
  if (has_bias) {
    RUCCL_CHECK(bias.dim() == 1 && bias.shape()[0] == outf, ShapeError,
                "linear: expected a bias of shape [", outf, "], got ", bias.shape());
  }
  // Rows of x as one matrix [rows, in].
  Tensor x2 = x.dim() == 2 ? x.value() : x.value().reshape(Shape{-1, in});
  Tensor out = ruccl::matmul(x2, weight.value().transpose(0, 1));
  if (has_bias) out = ruccl::add(out, bias.value());
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 1] = outf;
  if (x.dim() != 2) out = out.reshape(out_shape);
  auto rule = [sx = weight.requires_grad() ? x2 : Tensor(),
               sw = x.requires_grad() ? weight.value() : Tensor(),
               outf](const Tensor& g, GradInputs& grads) {
    Tensor g2 = g.dim() == 2 ? g : reshape_grad(g, Shape{g.numel() / outf, outf});
    if (grads.needed(0)) grads[0] = reshape_grad(ruccl::matmul(g2, sw), grads.input_shape(0));
    if (grads.needed(1)) grads[1] = ruccl::matmul(g2.transpose(0, 1), sx);
    if (grads.size() > 2 && grads.needed(2)) grads[2] = ruccl::sum(g2, 0);
  };
  if (has_bias) return make_var(std::move(out), "linear", {x, weight, bias}, std::move(rule));
  return make_var(std::move(out), "linear", {x, weight}, std::move(rule));
}

}  // namespace ruccl::autodiff
