#pragma once
// sum_to: the one place broadcasting is undone in backward rules.
#include "tensor/core/tensor.h"

namespace ruccl::autodiff {

/// Sums `grad` down to `shape`, undoing a broadcast from `shape` to grad's shape: leading dims are
/// summed away and dims where `shape` has size 1 are summed with keepdim. Returns `grad` itself
/// when the shapes already match. ShapeError when `shape` does not broadcast to grad's shape.
Tensor sum_to(const Tensor& grad, const Shape& shape);

/// grad.reshape(shape), also from a 0-d tensor (Tensor::reshape of a 0-d tensor to [1, ...]
/// throws at the moment; this expands it instead, a view with stride 0).
Tensor reshape_grad(const Tensor& grad, const Shape& shape);

}  // namespace ruccl::autodiff
