#pragma once
// Differentiable shape ops on Var. Views in forward; gradients come back in the input's shape and
// layout (the inverse view, or a scatter into zeros for narrow).
#include <cstdint>
#include <vector>

#include "autodiff/var.h"

namespace ruccl::autodiff {

Var reshape(const Var& x, const Shape& shape);
Var transpose(const Var& x, std::int64_t d0, std::int64_t d1);
Var permute(const Var& x, const std::vector<std::int64_t>& dims);
/// Elements [start, start + length) of dim `d`; backward pads the gradient with zeros.
Var narrow(const Var& x, std::int64_t d, std::int64_t start, std::int64_t length);
/// Element `i` of dim `d` (negative counts from the end), dropping the dim; backward copies the
/// gradient into that slice of zeros.
Var select(const Var& x, std::int64_t d, std::int64_t i);
/// Broadcast view; backward sums the gradient back (sum_to).
Var expand(const Var& x, const Shape& shape);
Var squeeze(const Var& x, std::int64_t d);
Var unsqueeze(const Var& x, std::int64_t d);
Var flatten(const Var& x, std::int64_t start = 0, std::int64_t end = -1);
/// Dim `dim` split into `sizes` (one -1 inferred), as torch.unflatten; the inverse of flatten.
Var unflatten(const Var& x, std::int64_t dim, const std::vector<std::int64_t>& sizes);
/// A contiguous copy (identity gradient).
Var contiguous(const Var& x);

/// Concatenation along `dim`; backward narrows the gradient into each input's piece.
Var cat(const std::vector<Var>& xs, std::int64_t dim = 0);
/// Joins equal-shaped Vars along a new dim.
Var stack(const std::vector<Var>& xs, std::int64_t dim = 0);
/// Pieces of `split_size` along `dim` (each a narrow, so each has its own node).
std::vector<Var> split(const Var& x, std::int64_t split_size, std::int64_t dim = 0);
std::vector<Var> split(const Var& x, const std::vector<std::int64_t>& sizes, std::int64_t dim = 0);
/// `chunks` pieces as torch.chunk.
std::vector<Var> chunk(const Var& x, std::int64_t chunks, std::int64_t dim = 0);

}  // namespace ruccl::autodiff
