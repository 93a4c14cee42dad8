#pragma once
#include <cstdint>

#include "autodiff/nn/module.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Options of Embedding (every member has a default: name only what you change).
struct EmbeddingOptions {
  /// The weight's dtype (floating).
  DType dtype = DType::F32;
};

/// A lookup table of `num_embeddings` rows of size `dim` ("weight", N(0, 1) from `gen` or, without
/// one, from the default generator, as torch.nn.Embedding). forward takes class indices (I64/I32,
/// any shape) and gives indices.shape + [dim]; backward index_adds into the rows used (repeats
/// accumulate).
class Embedding : public Cloneable<Embedding> {
 public:
  explicit Embedding(std::int64_t num_embeddings, std::int64_t dim, EmbeddingOptions options = {});
  Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator& gen,
            EmbeddingOptions options = {});
  /// Looks up `indices` (the Var's value; it needs no gradient).
  Var forward(const Var& indices) override;
  Var forward(const Tensor& indices);
  Param& weight() { return param_at(weight_); }
  const Param& weight() const { return param_at(weight_); }

 private:
  /// Both public constructors: draws from *gen, or from the default generator when null.
  Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator* gen,
            EmbeddingOptions options);
  std::size_t weight_ = 0;
};

}  // namespace ruccl::nn
