// multinomial: the weights come to the host (the Generator is a host object, as for randn), the
// draws are made there and the indices go back to probs' device.
#include "tensor/ops/sampling.h"

#include <cmath>
#include <vector>

namespace ruccl {

namespace {

// One category drawn from `weights` (non-negative, total > 0): the first whose running sum
// exceeds u in [0, total). Rounding can leave u at the very end: the last positive weight then.
std::int64_t draw(const std::vector<double>& weights, double total, Generator& gen) {
  const double u = gen.next_double() * total;
  double running = 0.0;
  std::int64_t last_positive = 0;
  for (std::size_t c = 0; c < weights.size(); ++c) {
    if (weights[c] <= 0.0) continue;
    running += weights[c];
    last_positive = static_cast<std::int64_t>(c);
    if (u < running) return last_positive;
  }
  return last_positive;
}

}  // namespace

Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement,
                   Generator& gen) {
  RUCCL_CHECK(probs.defined(), ValueError,
              "multinomial: expected a defined tensor, got an undefined one");
  RUCCL_CHECK(probs.dim() == 1 || probs.dim() == 2, ShapeError,
              "multinomial: expected probs of 1 or 2 dims, got ", probs.dim(), " dims (shape ",
              probs.shape(), ")");
  RUCCL_CHECK(is_floating(probs.dtype()), DTypeError,
              "multinomial: expected floating probs (F16, BF16, F32, F64), got ", probs.dtype());
  RUCCL_CHECK(num_samples >= 1, ValueError, "multinomial: expected num_samples >= 1, got ",
              num_samples);
  const std::int64_t rows = probs.dim() == 2 ? probs.shape()[0] : 1;
  const std::int64_t categories = probs.shape()[probs.dim() - 1];
  RUCCL_CHECK(categories >= 1, ShapeError,
              "multinomial: expected at least one category, got shape ", probs.shape());
  RUCCL_CHECK(replacement || num_samples <= categories, ValueError,
              "multinomial: expected num_samples <= ", categories,
              " (the number of categories) without replacement, got ", num_samples);
  const std::vector<double> all = probs.to(DType::F64).contiguous().to_vector<double>();
  std::vector<std::int64_t> out(static_cast<std::size_t>(rows * num_samples));
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto begin = all.begin() + r * categories;
    std::vector<double> weights(begin, begin + categories);
    double total = 0.0;
    std::int64_t positive = 0;
    for (std::int64_t c = 0; c < categories; ++c) {
      const double w = weights[static_cast<std::size_t>(c)];
      RUCCL_CHECK(std::isfinite(w) && w >= 0.0, ValueError,
                  "multinomial: expected non-negative finite weights, got ", w, " at row ", r,
                  ", category ", c);
      total += w;
      positive += w > 0.0 ? 1 : 0;
    }
    RUCCL_CHECK(total > 0.0, ValueError, "multinomial: expected a positive sum of weights, got 0 ",
                "in row ", r);
    RUCCL_CHECK(replacement || num_samples <= positive, ValueError, "multinomial: expected num_",
                "samples <= ", positive, " (the categories of nonzero weight in row ", r,
                ") without replacement, got ", num_samples);
    for (std::int64_t s = 0; s < num_samples; ++s) {
      const std::int64_t c = draw(weights, total, gen);
      out[static_cast<std::size_t>(r * num_samples + s)] = c;
      if (!replacement) {  // the remaining total is summed afresh: no drift from subtraction
        weights[static_cast<std::size_t>(c)] = 0.0;
        total = 0.0;
        for (const double w : weights) total += w;
      }
    }
  }
  const Shape shape = probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples};
  return Tensor::from_vector(out, shape, probs.device());
}

}  // namespace ruccl
