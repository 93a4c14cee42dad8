// masked_fill, tril and triu: validate, then one where() of x against a scalar of x's dtype (no
// math here; the masks of tril/triu are two aranges compared).
#include "tensor/ops/masking.h"

#include "tensor/ops/elementwise.h"

namespace ruccl {

namespace {

void check_defined(const Tensor& t, const char* op) {
  RUCCL_CHECK(t.defined(), ValueError, op, ": expected a defined tensor, got an undefined one");
}

Tensor triangle(const Tensor& x, std::int64_t diagonal, bool lower, const char* name) {
  check_defined(x, name);
  RUCCL_CHECK(x.dim() >= 2, ShapeError, name, ": expected a tensor of at least 2 dims, got ",
              x.dim(), " dims (shape ", x.shape(), ")");
  const Tensor mask =
      triangle_mask(x.shape()[x.dim() - 2], x.shape()[x.dim() - 1], diagonal, lower, x.device());
  return where(mask, x, Tensor::scalar(0, x.dtype(), x.device()));
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  check_defined(x, "masked_fill");
  check_defined(mask, "masked_fill");
  RUCCL_CHECK(mask.dtype() == DType::Bool, DTypeError, "masked_fill: expected a Bool mask, got ",
              mask.dtype(), "; make one with a comparison such as gt(x, 0)");
  RUCCL_CHECK(mask.device() == x.device(), DeviceError,
              "masked_fill: expected the mask on x's device ", x.device(), ", got ", mask.device());
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  RUCCL_CHECK(shape == x.shape(), ShapeError, "masked_fill: expected a mask broadcastable to ",
              x.shape(), ", got ", mask.shape());
  return where(mask, Tensor::scalar(value, x.dtype(), x.device()), x);
}

Tensor triangle_mask(std::int64_t rows, std::int64_t cols, std::int64_t diagonal, bool lower,
                     Device device) {
  RUCCL_CHECK(rows >= 0 && cols >= 0, ShapeError,
              "triangle_mask: expected non-negative rows and cols, got ", rows, " and ", cols);
  if (rows == 0 || cols == 0) return Tensor::zeros({rows, cols}, DType::Bool, device);
  const Tensor i = Tensor::arange(0, rows, 1, DType::I64, device).reshape({rows, 1});
  const Tensor j = Tensor::arange(0, cols, 1, DType::I64, device).reshape({1, cols});
  const Tensor offset = j - i;  // j - i, [rows, cols]
  return lower ? le(offset, diagonal) : ge(offset, diagonal);
}

Tensor tril(const Tensor& x, std::int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, std::int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

}  // namespace ruccl
