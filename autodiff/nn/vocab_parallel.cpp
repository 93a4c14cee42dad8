#include "autodiff/nn/vocab_parallel.h"

#include "autodiff/collective/collective_ops.h"
#include "autodiff/collective/region_ops.h"
#include "autodiff/nn/embedding.h"
#include "autodiff/nn/parallel_linear.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/elementwise_math.h"
#include "autodiff/ops/index.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/shape.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"

namespace ruccl::nn {

namespace dc = autodiff::collective;

namespace {

// IndexError unless every index (other than `ignore`, when given) is in [0, vocab). The indices
// are replicated, so every rank raises it alike, before any collective.
void check_indices(const Tensor& idx, std::int64_t vocab, const std::string& who, bool has_ignore,
                   std::int64_t ignore) {
  RUCCL_CHECK(idx.dtype() == DType::I64 || idx.dtype() == DType::I32, DTypeError, who,
              ": expected integer (I64/I32) indices, got ", idx.dtype());
  if (idx.numel() == 0) return;
  Tensor v = idx.to(DType::I64);
  if (has_ignore) v = ruccl::where(ruccl::eq(v, Scalar(ignore)), Tensor::scalar(0, DType::I64), v);
  const auto lo = ruccl::min(v).item<std::int64_t>();
  const auto hi = ruccl::max(v).item<std::int64_t>();
  RUCCL_CHECK(lo >= 0 && hi < vocab, IndexError, who, ": expected indices in [0, ", vocab,
              "), got one in [", lo, ", ", hi, "]");
}

// The part of the vocabulary rank `rank` holds: [start, start + size).
struct VocabRange {
  std::int64_t start;
  std::int64_t size;
  // Bool: the indices in this range; and the indices made local (0 outside the range).
  Tensor held(const Tensor& idx) const {
    return ruccl::logical_and(ruccl::ge(idx, Scalar(start)), ruccl::lt(idx, Scalar(start + size)));
  }
  Tensor local(const Tensor& idx, const Tensor& in_range) const {
    return ruccl::where(in_range, ruccl::sub(idx, Scalar(start)),
                        Tensor::scalar(0, DType::I64, idx.device()));
  }
};

Var embedding_forward(const Tensor& indices, const Var& weight, Communicator& comm,
                      const VocabParallelEmbeddingOptions& options, const std::string& who) {
  const std::int64_t local = weight.shape()[0];
  check_indices(indices, local * comm.world_size(), who, false, 0);
  const Tensor idx = indices.to(DType::I64);
  const VocabRange range{comm.rank() * local, local};
  const Tensor in_range = range.held(idx);
  Shape out_shape = idx.shape();
  out_shape.push_back(weight.shape()[1]);
  const Var rows = autodiff::reshape(
      autodiff::index_select(weight, 0, range.local(idx, in_range).reshape(Shape{idx.numel()})),
      out_shape);
  const Tensor keep = in_range.to(weight.dtype()).unsqueeze(-1);
  const Var partial = autodiff::mul(rows, Var(keep));
  return options.sequence_parallel ? dc::reduce_scatter_sum_dim(partial, options.sequence_dim, comm)
                                   : dc::reduce_from_region(partial, comm);
}

}  // namespace

Var vocab_parallel_embedding(const Tensor& indices, const Var& weight, Communicator& comm,
                             const VocabParallelEmbeddingOptions& options) {
  return embedding_forward(indices, weight, comm, options, "vocab_parallel_embedding");
}

VocabParallelEmbedding::VocabParallelEmbedding(std::int64_t num_embeddings, std::int64_t dim,
                                               Communicator comm, Generator& gen,
                                               VocabParallelEmbeddingOptions options)
    : VocabParallelEmbedding(num_embeddings, dim, std::move(comm), &gen, options) {}

VocabParallelEmbedding::VocabParallelEmbedding(std::int64_t num_embeddings, std::int64_t dim,
                                               Communicator comm,
                                               VocabParallelEmbeddingOptions options)
    : VocabParallelEmbedding(num_embeddings, dim, std::move(comm), nullptr, options) {}

VocabParallelEmbedding::VocabParallelEmbedding(std::int64_t num_embeddings, std::int64_t dim,
                                               Communicator comm, Generator* gen,
                                               VocabParallelEmbeddingOptions options)
    : comm_(std::move(comm)), options_(options), num_embeddings_(num_embeddings) {
  const int world = comm_.world_size();
  RUCCL_CHECK(num_embeddings > 0 && num_embeddings % world == 0, ValueError,
              "VocabParallelEmbedding: expected num_embeddings divisible by the group size ", world,
              ", got ", num_embeddings);
  const EmbeddingOptions o{.dtype = options.dtype};
  Embedding full =
      gen != nullptr ? Embedding(num_embeddings, dim, *gen, o) : Embedding(num_embeddings, dim, o);
  weight_ = register_parameter("weight", Param(shard_along(full.weight().value(), 0, comm_.rank(),
                                                           world, "VocabParallelEmbedding")));
}

Var VocabParallelEmbedding::forward(const Var& indices) { return forward(indices.value()); }

Var VocabParallelEmbedding::forward(const Tensor& indices) {
  return embedding_forward(indices, weight().var(), comm_, options_, describe());
}

Var vocab_parallel_cross_entropy(const Var& logits, const Tensor& targets, Communicator& comm,
                                 const VocabParallelCrossEntropyOptions& options) {
  const char* who = "vocab_parallel_cross_entropy";
  RUCCL_CHECK(logits.defined() && logits.dim() >= 1, ShapeError, who,
              ": expected logits with a class dim, got ",
              logits.defined() ? str(logits.shape()) : std::string("an undefined Var"));
  RUCCL_CHECK(is_floating(logits.dtype()), DTypeError, who, ": expected floating logits, got ",
              logits.dtype());
  Shape rows = logits.shape();
  const std::int64_t local = rows[rows.size() - 1];
  rows.erase(rows.size() - 1);
  RUCCL_CHECK(targets.shape() == rows, ShapeError, who,
              ": expected targets of the logits' shape without the class dim, ", rows, ", got ",
              targets.shape());
  check_indices(targets, local * comm.world_size(), who, true, options.ignore_index);
  const Tensor t = targets.to(DType::I64);
  const Device device = logits.value().device();

  // The row maxima over the whole vocabulary, as constants (they cancel in the gradient).
  const Tensor local_max = ruccl::max(logits.value(), -1, true);
  const Tensor row_max = dc::all_reduce_max(Var(local_max), comm).value();
  const Var shifted = autodiff::sub(logits, Var(row_max));
  const Var sum_exp = dc::reduce_from_region(autodiff::sum(autodiff::exp(shifted), -1), comm);

  // The target's shifted logit, from the rank that holds the target's class.
  const VocabRange range{comm.rank() * local, local};
  const Tensor in_range = range.held(t);
  const Var picked =
      autodiff::squeeze(autodiff::gather(shifted, -1, range.local(t, in_range).unsqueeze(-1)), -1);
  const Var target_logit =
      dc::reduce_from_region(autodiff::mul(picked, Var(in_range.to(logits.dtype()))), comm);

  const Tensor valid = ruccl::ne(t, Scalar(options.ignore_index)).to(logits.dtype());
  const Var per_row =
      autodiff::mul(autodiff::sub(autodiff::log(sum_exp), target_logit), Var(valid));
  const Var total = autodiff::sum(per_row);
  if (options.reduction == autodiff::Reduction::Sum) return total;
  return autodiff::div(total, Var(ruccl::sum(valid).to(device)));
}

}  // namespace ruccl::nn
