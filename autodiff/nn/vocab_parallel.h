#pragma once
// Vocabulary-parallel embedding and cross-entropy (Megatron-LM's VocabParallelEmbedding and
// vocab_parallel_cross_entropy): the vocabulary is split over the group, so no rank ever holds the
// whole table or the whole row of logits. Built from the region ops and the differentiable
// collectives (docs/parallelism.md draws them; docs/autodiff.md §10 derives their gradients).
//
//   nn::VocabParallelEmbedding embed(vocab, dim, tp, gen);   // rows [r V/W, (r+1) V/W)
//   nn::ColumnParallelLinear head(dim, vocab, tp, gen2);     // logits [B, T, V / W]
//   Var loss = nn::vocab_parallel_cross_entropy(head(embed(ids)), targets, tp);   // replicated
#include <cstdint>

#include "autodiff/nn/module.h"
#include "autodiff/ops/loss.h"
#include "collective/communicator.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Options of VocabParallelEmbedding (every member has a default).
struct VocabParallelEmbeddingOptions {
  /// Leave the output split along `sequence_dim` (reduce_scatter_sum_dim) instead of replicated
  /// (reduce_from_region): the entry of a sequence-parallel region.
  bool sequence_parallel = false;
  /// The output's sequence dim under sequence_parallel (negative counts from the end).
  std::int64_t sequence_dim = -2;
  /// The weight's dtype (floating).
  DType dtype = DType::F32;
};

/// nn::Embedding with its rows (the vocabulary) split over the group: rank r holds rows
/// [r V/W, (r+1) V/W). forward looks up the (replicated) indices it holds, zeroes the rows of
/// indices another rank holds, and sums over the group with reduce_from_region (backward
/// identity): every row's gradient lands on the one rank that holds it. Initialised as the
/// one-rank nn::Embedding(V, dim, gen). Parameter "weight" [V / W, dim]. ValueError unless V
/// divides by the group size; IndexError for an index outside [0, V) (on every rank: the indices
/// are replicated).
class VocabParallelEmbedding : public Cloneable<VocabParallelEmbedding> {
 public:
  VocabParallelEmbedding(std::int64_t num_embeddings, std::int64_t dim, Communicator comm,
                         Generator& gen, VocabParallelEmbeddingOptions options = {});
  /// Draws from the default generator.
  VocabParallelEmbedding(std::int64_t num_embeddings, std::int64_t dim, Communicator comm,
                         VocabParallelEmbeddingOptions options = {});
  /// indices (I64/I32, any shape; the Var's value) -> indices.shape + [dim].
  Var forward(const Var& indices) override;
  Var forward(const Tensor& indices);
  Param& weight() { return param_at(weight_); }
  std::int64_t num_embeddings() const { return num_embeddings_; }
  Communicator& communicator() { return comm_; }
  void set_communicator(Communicator comm) { comm_ = std::move(comm); }

 private:
  VocabParallelEmbedding(std::int64_t num_embeddings, std::int64_t dim, Communicator comm,
                         Generator* gen, VocabParallelEmbeddingOptions options);
  Communicator comm_;
  VocabParallelEmbeddingOptions options_;
  std::int64_t num_embeddings_;
  std::size_t weight_ = 0;
};

/// VocabParallelEmbedding's forward as a function of the shard `weight` [V / W, dim].
Var vocab_parallel_embedding(const Tensor& indices, const Var& weight, Communicator& comm,
                             const VocabParallelEmbeddingOptions& options = {});

/// Options of vocab_parallel_cross_entropy.
struct VocabParallelCrossEntropyOptions {
  /// Mean over the counted targets (default) or Sum.
  autodiff::Reduction reduction = autodiff::Reduction::Mean;
  /// Targets equal to this take no part (zero loss and gradient, not counted by Mean).
  std::int64_t ignore_index = -100;
};

/// Cross-entropy of logits split over the group along their LAST dim (rank r holds classes
/// [r V/W, (r+1) V/W): a ColumnParallelLinear's output without gather_output) against the
/// replicated class indices `targets` (logits.shape without the last dim, I64/I32, in [0, V) or
/// ignore_index). Stable and never gathers the logits: the row maxima are all-reduced (Max, as
/// constants: they cancel in the gradient), then the sums of exp(logit - max) and the target's
/// shifted logit (from the rank that holds it) are summed with reduce_from_region; loss =
/// log(sum) - target logit. Three all-reduces of [N] values. The result is replicated: a loss
/// that counts once (docs/autodiff.md §10). Equals nn::cross_entropy on the gathered logits.
Var vocab_parallel_cross_entropy(const Var& logits, const Tensor& targets, Communicator& comm,
                                 const VocabParallelCrossEntropyOptions& options = {});

}  // namespace ruccl::nn
