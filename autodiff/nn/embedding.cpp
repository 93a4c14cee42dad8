#include "autodiff/nn/embedding.h"

#include "autodiff/nn/init.h"
#include "autodiff/ops/index.h"
#include "autodiff/ops/shape.h"
#include "autodiff/ops/sum_to.h"

namespace ruccl::nn {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, EmbeddingOptions options)
    : Embedding(num_embeddings, dim, nullptr, options) {}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator& gen,
                     EmbeddingOptions options)
    : Embedding(num_embeddings, dim, &gen, options) {}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, Generator* gen,
                     EmbeddingOptions options) {
  const DType dtype = options.dtype;
  RUCCL_CHECK(is_floating(dtype), DTypeError, "Embedding: expected a floating dtype, got ", dtype);
  RUCCL_CHECK(num_embeddings > 0 && dim > 0, ValueError, "Embedding: expected positive sizes, got ",
              num_embeddings, " x ", dim);
  Param w(Tensor::zeros({num_embeddings, dim}, dtype));
  if (gen != nullptr) {
    init::normal_(w, 0.0, 1.0, *gen);
  } else {
    init::normal_(w, 0.0, 1.0);
  }
  weight_ = register_parameter("weight", w);
}

Var Embedding::forward(const Var& indices) { return forward(indices.value()); }

Var Embedding::forward(const Tensor& indices) {
  RUCCL_CHECK(indices.dtype() == DType::I64 || indices.dtype() == DType::I32, DTypeError,
              describe(), ": expected integer (I64/I32) indices, got ", indices.dtype());
  Shape out_shape = indices.shape();
  out_shape.push_back(weight().shape()[1]);
  Var rows;
  try {
    rows = autodiff::index_select(weight().var(), 0,
                                  autodiff::reshape_grad(indices, Shape{indices.numel()}));
  } catch (const IndexError& e) {
    // index_select checks the bounds (positions are into the flattened indices).
    throw IndexError(str(describe(), ": expected indices in [0, ", weight().shape()[0],
                         "), got one out of range (", e.what(), ")"));
  }
  return autodiff::reshape(rows, out_shape);
}

}  // namespace ruccl::nn
