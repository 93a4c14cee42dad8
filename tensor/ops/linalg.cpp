// matmul's frontend: torch.matmul's shape rules, reduced to one batched [B, M, K] x [B, K, N]
// call of Backend::matmul on broadcast views (no copies here).
#include "tensor/ops/linalg.h"

#include "tensor/backend/backend.h"

namespace ruccl {

namespace {

// "[2, 3] and [4, 5]" for error messages.
std::string shapes(const Tensor& a, const Tensor& b) { return str(a.shape(), " and ", b.shape()); }

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  RUCCL_CHECK(a.defined() && b.defined(), ValueError,
              "matmul: expected defined tensors, got an undefined one");
  RUCCL_CHECK(a.dim() >= 1 && b.dim() >= 1, ShapeError,
              "matmul: expected tensors with at least 1 dim, got ", shapes(a, b));
  RUCCL_CHECK(a.device() == b.device(), DeviceError,
              "matmul: expected both tensors on one device, got ", a.device(), " and ", b.device());
  RUCCL_CHECK(a.dtype() == b.dtype(), DTypeError, "matmul: expected equal dtypes, got ", a.dtype(),
              " and ", b.dtype());
  RUCCL_CHECK(is_floating(a.dtype()), DTypeError, "matmul: expected a floating dtype, got ",
              a.dtype());
  if (a.dim() == 1 && b.dim() == 1) {
    RUCCL_CHECK(a.size(0) == b.size(0), ShapeError,
                "matmul: expected a.shape[0] == b.shape[0] for a dot product, got ", shapes(a, b));
  } else if (b.dim() == 1) {
    RUCCL_CHECK(a.size(-1) == b.size(0), ShapeError,
                "matmul: expected a.shape[-1] == b.shape[0], got ", shapes(a, b));
  } else {
    RUCCL_CHECK(a.size(-1) == b.size(-2), ShapeError,
                "matmul: expected a.shape[-1] == b.shape[-2], got ", shapes(a, b));
  }

  // 1-d operands become matrices ([K] -> [1, K] on the left, [K, 1] on the right); the added dim
  // is dropped from the result, as torch does.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const std::int64_t m = a2.size(-2);
  const std::int64_t k = a2.size(-1);
  const std::int64_t n = b2.size(-1);

  Shape a_batch;
  Shape b_batch;
  for (std::int64_t i = 0; i + 2 < a2.dim(); ++i) a_batch.push_back(a2.size(i));
  for (std::int64_t i = 0; i + 2 < b2.dim(); ++i) b_batch.push_back(b2.size(i));
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
  const std::int64_t batch_numel = batch.numel();

  Shape a_full = batch;
  a_full.push_back(m);
  a_full.push_back(k);
  Shape b_full = batch;
  b_full.push_back(k);
  b_full.push_back(n);
  // reshape to 3-d stays a view for the common layouts (contiguous batches, a shared operand);
  // otherwise it copies the expanded operand.
  const Tensor a3 = a2.expand(a_full).reshape(Shape{batch_numel, m, k});
  const Tensor b3 = b2.expand(b_full).reshape(Shape{batch_numel, k, n});

  Tensor out = Tensor::empty(Shape{batch_numel, m, n}, a.dtype(), a.device());
  backend_for(a.device()).matmul(a3, b3, out);

  Shape result = batch;
  if (a.dim() > 1) result.push_back(m);
  if (b.dim() > 1) result.push_back(n);
  return out.view(result);
}

}  // namespace ruccl
