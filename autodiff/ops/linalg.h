#pragma once
// Differentiable linear algebra on Var.
#include "autodiff/var.h"

namespace ruccl::autodiff {

/// torch.matmul's rules (1-d, 2-d, batched with broadcast batch dims). Backward: dA = g @ B^T,
/// dB = A^T @ g, with 1-d operands promoted and broadcast batch dims summed back.
Var matmul(const Var& a, const Var& b);
/// x @ weight^T + bias with weight [out, in] and bias [out] (undefined Var: no bias), x [..., in].
/// One fused node: d weight = g^T @ x comes out in weight's [out, in] layout with no transpose
/// copy; inputs that need no gradient (the data) cost nothing in backward.
Var linear(const Var& x, const Var& weight, const Var& bias = Var());

}  // namespace ruccl::autodiff
