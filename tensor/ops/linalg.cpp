// matmul's frontend: torch.matmul's shape rules, reduced to one batched [B, M, K] x [B, K, N]
// call of Backend::matmul on broadcast views (no copies here).
#include "tensor/ops/linalg.h"

#include "tensor/backend/backend.h"

namespace ruccl {

namespace {

// "[2, 3] and [4, 5]" for error messages.
std::string shapes(const Tensor& a, const Tensor& b) { return str(a.shape(), " and ", b.shape()); }

}  // namespace

namespace {

// matmul reduced to one batched product: a3 [B, M, K] x b3 [B, K, N] -> [B, M, N], viewed as
// `result` (torch's output shape).
struct MatmulPlan {
  Tensor a3;
  Tensor b3;
  Shape out3;
  Shape result;
};

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b) {
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
  const std::int64_t batch_numel = batch.numel("matmul");

  Shape a_full = batch;
  a_full.push_back(m);
  a_full.push_back(k);
  Shape b_full = batch;
  b_full.push_back(k);
  b_full.push_back(n);
  // Each operand fits int64 alone, but broadcast to the other's batch it may not.
  (void)a_full.numel("matmul");
  (void)b_full.numel("matmul");
  MatmulPlan plan;
  // reshape to 3-d stays a view for the common layouts (contiguous batches, a shared operand);
  // otherwise it copies the expanded operand.
  plan.a3 = a2.expand(a_full).reshape(Shape{batch_numel, m, k});
  plan.b3 = b2.expand(b_full).reshape(Shape{batch_numel, k, n});
  plan.out3 = Shape{batch_numel, m, n};
  (void)plan.out3.numel("matmul");
  plan.result = batch;
  if (a.dim() > 1) plan.result.push_back(m);
  if (b.dim() > 1) plan.result.push_back(n);
  return plan;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const MatmulPlan plan = plan_matmul(a, b);
  Tensor out = Tensor::empty(plan.out3, a.dtype(), a.device(), "matmul");
  backend_for(a.device()).matmul(plan.a3, plan.b3, out);
  return out.view(plan.result);
}

void matmul_out(const Tensor& a, const Tensor& b, Tensor& out) {
  const MatmulPlan plan = plan_matmul(a, b);
  RUCCL_CHECK(out.defined(), ValueError,
              "matmul_out: expected a defined output tensor, got an undefined one");
  RUCCL_CHECK(out.shape() == plan.result, ShapeError, "matmul_out: expected an output of shape ",
              plan.result, " for ", shapes(a, b), ", got ", out.shape());
  RUCCL_CHECK(out.dtype() == a.dtype(), DTypeError, "matmul_out: expected an output of dtype ",
              a.dtype(), ", got ", out.dtype());
  RUCCL_CHECK(out.device() == a.device(), DeviceError, "matmul_out: expected an output on ",
              a.device(), ", got one on ", out.device());
  const bool aliases = out.storage() == a.storage() || out.storage() == b.storage();
  if (out.is_contiguous() && !aliases) {
    backend_for(a.device()).matmul(plan.a3, plan.b3, out.view(plan.out3));
  } else {  // the backend writes a fresh contiguous [B, M, N]: compute aside, then copy in
    Tensor result = Tensor::empty(plan.out3, a.dtype(), a.device(), "matmul_out");
    backend_for(a.device()).matmul(plan.a3, plan.b3, result);
    out.copy_(result.view(plan.result));
  }
}

}  // namespace ruccl
