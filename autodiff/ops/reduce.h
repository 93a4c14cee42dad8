#pragma once
// Differentiable reductions and normalisations on Var (names as in tensor/ops/reduce.h). An empty
// dim list reduces over every dim.
#include <cstdint>
#include <vector>

#include "autodiff/var.h"

namespace ruccl::autodiff {

Var sum(const Var& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
Var sum(const Var& x, std::int64_t dim, bool keepdim = false);
/// Sum of every element (0-d).
Var sum(const Var& x);
Var mean(const Var& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
Var mean(const Var& x, std::int64_t dim, bool keepdim = false);
Var mean(const Var& x);
/// Product along `dim`. Backward: each element gets g times the product of the others, computed
/// as prefix and suffix products (exact with zeros in the input, unlike g * out / x).
Var prod(const Var& x, std::int64_t dim, bool keepdim = false);
/// Product of every element (0-d); backward as prod(dim) over the flattened input.
Var prod(const Var& x);
/// Largest value along `dim`. The whole gradient goes to the element argmax picks (the first
/// maximum on ties), as PyTorch's max(dim).
Var max(const Var& x, std::int64_t dim, bool keepdim = false);
/// Largest element (0-d). On ties the gradient is split evenly among all maxima (PyTorch).
Var max(const Var& x);
/// Smallest value along `dim`; gradient to the first minimum (argmin).
Var min(const Var& x, std::int64_t dim, bool keepdim = false);
/// Smallest element (0-d); ties split the gradient evenly.
Var min(const Var& x);
/// Variance over `dims` with `correction` (0: population, 1: sample). A composite of mean, sub
/// and mul: its gradient comes from theirs.
Var var(const Var& x, const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
        bool keepdim = false);
/// softmax along `dim`; backward y * (g - sum(g * y, dim)).
Var softmax(const Var& x, std::int64_t dim);
/// log_softmax along `dim`; backward g - softmax(x) * sum(g, dim).
Var log_softmax(const Var& x, std::int64_t dim);

/// Index of the largest value along `dim` (not differentiable: a Tensor).
Tensor argmax(const Var& x, std::int64_t dim, bool keepdim = false);

}  // namespace ruccl::autodiff
