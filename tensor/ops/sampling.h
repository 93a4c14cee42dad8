#pragma once
// Sampling indices from categorical distributions (torch.multinomial), drawn from a Generator so
// that a run is reproducible.
//
//   Generator gen(7);
//   Tensor next_token = multinomial(softmax(logits / temperature, -1), 1, false, gen);  // [B, 1]
#include "tensor/core/tensor.h"
#include "tensor/random/generator.h"

namespace ruccl {

/// `num_samples` category indices (I64) per row of `probs` (1-d [C] gives [num_samples], 2-d
/// [B, C] gives [B, num_samples]), each drawn with probability proportional to its weight. Rows
/// are non-negative finite weights, not necessarily normalised (floating dtype). Without
/// `replacement` a category is drawn at most once per row. The draws are a fixed function of
/// `gen`'s stream: per row, in order, one gen.next_double() per sample, u = that * (the row's
/// remaining total), the first category whose running sum of remaining weights exceeds u (sums in
/// double). Errors: ValueError for a negative, infinite or NaN weight, a row summing to 0,
/// num_samples < 1, or, without replacement, more samples than categories of nonzero weight;
/// ShapeError for other ranks; DTypeError for non-floating probs.
Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement, Generator& gen);

}  // namespace ruccl
